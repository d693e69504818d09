"""The system prompt of ``pi run``, built the way Pi's ``buildSystemPrompt``
builds its default prompt (coding-agent ``core/system-prompt.ts``), from the tools' own
``prompt_snippet``, ``prompt_guidelines`` and ``prompt_guidelines_for``
(:class:`~pi_core._tools.definition.ToolDefinition`): the guidelines that depend on the session's
other tools (``prompt_guidelines_for(tool_names)``, e.g. bash's file-exploration guideline) come
first, then each tool's own ``prompt_guidelines``.

Layout (``{...}`` filled in)::

    You are an expert coding assistant operating inside pi, a coding agent harness. You help
    users by reading files, executing commands, editing code, and writing new files.

    Available tools:
    - read: Read file contents             one line per tool that has a prompt_snippet,
    - bash: Execute bash commands (...)    in registration order; "(none)" when none has one

    In addition to the tools above, you may have access to other custom tools depending on the project.

    Guidelines:
    - Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)
    - Use read to examine files instead of cat or sed.      each tool's guidelines, deduplicated
    - Be concise in your responses
    - Show file paths clearly when working with files

    Current date: 2026-11-30
    Current working directory: /abs/cwd

Pi's paragraph about its own documentation is left out (pi has none installed next to it).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from pi_core._tools.definition import AgentTool

INTRO = (
    "You are an expert coding assistant operating inside pi, a coding agent harness. "
    "You help users by reading files, executing commands, editing code, and writing new files."
)
CUSTOM_TOOLS = (
    "In addition to the tools above, you may have access to other custom tools depending on "
    "the project."
)
ALWAYS_GUIDELINES = (
    "Be concise in your responses",
    "Show file paths clearly when working with files",
)


def build_system_prompt(
    tools: Sequence[AgentTool], cwd: str, *, date: datetime.date | None = None
) -> str:
    """The system prompt for ``tools`` (in order) working in ``cwd`` (see the module
    docstring); ``date`` defaults to today (local time)."""
    names = [t.name for t in tools]
    lines = []
    guidelines: list[str] = []

    def add(guideline: str) -> None:
        text = guideline.strip()
        if text and text not in guidelines:
            guidelines.append(text)

    # guidelines that depend on the other tools come first (Pi's file-exploration guideline)
    for agent_tool in tools:
        definition = agent_tool.definition
        if definition is not None and definition.prompt_guidelines_for is not None:
            for guideline in definition.prompt_guidelines_for(list(names)):
                add(guideline)
    for agent_tool in tools:
        definition = agent_tool.definition
        if definition is None:
            continue
        if definition.prompt_snippet:
            lines.append(f"- {agent_tool.name}: {definition.prompt_snippet}")
        for guideline in definition.prompt_guidelines:
            add(guideline)
    for guideline in ALWAYS_GUIDELINES:
        add(guideline)
    today = (date or datetime.date.today()).isoformat()
    return (
        f"{INTRO}\n\n"
        f"Available tools:\n{chr(10).join(lines) or '(none)'}\n\n"
        f"{CUSTOM_TOOLS}\n\n"
        f"Guidelines:\n{chr(10).join('- ' + g for g in guidelines)}\n"
        f"\nCurrent date: {today}"
        f"\nCurrent working directory: {cwd.replace(chr(92), '/')}"
    )


__all__ = ["build_system_prompt"]
