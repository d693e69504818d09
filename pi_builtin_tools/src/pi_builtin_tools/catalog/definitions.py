"""The definitions of the script tools (``codemode``, ``codemode_python``) and ``tool_search``:
their names, texts, schemas and ``ToolDefinition`` factories, without their code.

The three are registered in every session but inactive until ``--tools``, ``--codemode`` or
``--tool-search`` activates them, so most sessions never call them. Registering reads only what
is here; the modules that do the work (:mod:`pi_builtin_tools.codemode.javascript`,
:mod:`pi_builtin_tools.codemode.python`, :mod:`pi_builtin_tools.catalog.tool_search`, with their
declarations, BM25 ranking and worker code) are imported by the tool's first call or by the
loadout of a session in which the tool is active. Those modules give the same names, and the
factories are in the package's door too (``from pi_builtin_tools import
create_codemode_tool_definition``).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from pi_core import AgentToolResult, LoadoutChanges, ToolDefinition, ToolLoadout


def _execute_from(module: str, name: str) -> Callable[..., Awaitable[AgentToolResult]]:
    """An ``execute`` that imports ``module`` at its first call and awaits its ``name``."""

    async def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        function = getattr(importlib.import_module(module), name)
        result: AgentToolResult = await function(tool_call_id, params, on_update, ctx)
        return result

    return execute


def _prepare_loadout_from(module: str, name: str) -> Callable[[ToolLoadout], LoadoutChanges]:
    """A ``prepare_loadout`` that imports ``module`` at its first call and calls its ``name``."""

    def prepare_loadout(loadout: ToolLoadout) -> LoadoutChanges:
        changes: LoadoutChanges = getattr(importlib.import_module(module), name)(loadout)
        return changes

    return prepare_loadout


# ---------------------------------------------------------------------------------------------
# codemode
# ---------------------------------------------------------------------------------------------

CODEMODE_TOOL_NAME = "codemode"

CODEMODE_SOURCE_GRAMMAR = r"""
start: options_source | plain_source
options_source: OPTIONS_LINE NEWLINE SOURCE
plain_source: SOURCE

OPTIONS_LINE: /[ \t]*\/\/ @options:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
"""
"""Lark grammar for providers with grammar-constrained tool input (Pi's
``CODEMODE_SOURCE_GRAMMAR``): it fixes the shape of the options line only."""

CODEMODE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Raw JavaScript source."}},
    "required": ["code"],
}

CODEMODE_DESCRIPTION_INTRO = (
    "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code "
    "fence), run as an async function body in a QuickJS sandbox: top-level `await` and `return` "
    "work. No Node, file system, network, or timers.\n"
    "- `await tools.<name>({ ...args })` resolves to a string, or an object if the tool's "
    "declaration says so, and rejects with an Error on failure. A tool whose declaration returns "
    "an object resolves on failure too when it returned that object; check its fields. Calls "
    "still running when the script ends are cancelled.\n"
    '- Optional first line: `// @options: {"max_output_tokens": 10000, "timeout_ms": 60000}`'
)
CODEMODE_DESCRIPTION_GLOBALS = "\n".join(
    [
        "Globals:",
        "- `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)`, and top-level "
        "`return` add output; `exit()` ends the script. With several text items, each starts "
        "with a `==> text N/M <==` line, and `console` lines follow the other output in one "
        "`<console_output>` block. `image()` also saves the image to a temp file and the result "
        "names its path.",
        "- `store(key, value)` and `load(key)` keep JSON values across codemode calls.",
        "- `ALL_TOOLS`, `await searchTools(query, { limit?, namespace? })`, "
        "`await describeTool(name)`, `await describeNamespace(name)`: find unlisted tools, such "
        "as MCP tools.",
    ]
)
CODEMODE_DESCRIPTION = f"{CODEMODE_DESCRIPTION_INTRO}\n\n{CODEMODE_DESCRIPTION_GLOBALS}"
CODEMODE_PROMPT_SNIPPET = "Run JavaScript that calls other tools"
CODEMODE_PROMPT_GUIDELINES = [
    "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter "
    "large output, instead of many separate calls."
]


def create_codemode_tool_definition() -> ToolDefinition:
    """The ``codemode`` :class:`~pi_core.ToolDefinition`: ``model-only`` (scripts cannot start
    scripts), inactive until ``--tools``/``pi replay --codemode`` activates it. ``execute`` is
    :func:`pi_builtin_tools.codemode.javascript.execute_codemode` and ``prepare_loadout``
    :func:`pi_builtin_tools.codemode.javascript.prepare_codemode_loadout`, imported by their
    first use."""
    return ToolDefinition(
        name=CODEMODE_TOOL_NAME,
        label=CODEMODE_TOOL_NAME,
        description=CODEMODE_DESCRIPTION,
        parameters=CODEMODE_PARAMETERS,
        execute=_execute_from("pi_builtin_tools.codemode.javascript", "execute_codemode"),
        prompt_snippet=CODEMODE_PROMPT_SNIPPET,
        prompt_guidelines=list(CODEMODE_PROMPT_GUIDELINES),
        exposure="model-only",
        default_active=False,
        prepare_loadout=_prepare_loadout_from(
            "pi_builtin_tools.codemode.javascript", "prepare_codemode_loadout"
        ),
        constrained_sampling={
            "type": "grammar",
            "variants": {"openai_lark": CODEMODE_SOURCE_GRAMMAR},
        },
    )


# ---------------------------------------------------------------------------------------------
# codemode_python
# ---------------------------------------------------------------------------------------------

CODEMODE_PYTHON_TOOL_NAME = "codemode_python"

CODEMODE_PYTHON_SOURCE_GRAMMAR = r"""
start: options_source | plain_source
options_source: OPTIONS_LINE NEWLINE SOURCE
plain_source: SOURCE

OPTIONS_LINE: /[ \t]*# @options:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
"""
"""Lark grammar for providers with grammar-constrained tool input (``codemode``'s, with the
Python options line): it fixes the shape of the options line only."""

CODEMODE_PYTHON_DESCRIPTION = """Run Python that calls other tools. The input is raw Python source, run as a \
script (top-level `await` works) in Monty, a sandboxed Python interpreter: no filesystem, \
network, subprocesses, timers or host modules; tools are the only way to reach the outside.

Call a tool with keyword arguments: `await tools.read(path="README.md")`; \
`getattr(tools, "raw name")` for a name that is not an identifier. Run independent calls \
concurrently with `await asyncio.gather(...)` after `import asyncio`. A call returns the \
tool's structured result (a dict) when the tool declares an output schema (bash: \
{"output", "exit_code", ...}), also when it failed; else its text, and a failed call raises \
RuntimeError with the tool's error text. An optional first line sets limits: \
`# @options: {"max_output_tokens": 1000, "timeout_ms": 60000}`.

Globals:
- `text(value)`: append text to the output (strings as is, other values as JSON)
- `image(value)`: append an image (base64 data: URL, {"image_url": ...} or an image block)
- `print(...)`: write a line to the console block shown after the output
- the value of the script's last expression is appended like `text(value)` unless it is None
- `exit()`: end the script successfully
- `store(key, value)` / `load(key)`: JSON values kept for later scripts of the session \
(`store(key, None)` deletes)
- `ALL_TOOLS`: [{"name", "description"}] of every callable tool
- `search_tools(query, limit=8, namespace=None)`: the tools matching a topic
- `describe_tool(name)`: a tool's description and declaration, or None"""

CODEMODE_PYTHON_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Raw Python source."}},
    "required": ["code"],
}


def create_codemode_python_tool_definition() -> ToolDefinition:
    """The ``codemode_python`` :class:`~pi_core.ToolDefinition` (inactive, ``model-only``).
    ``execute`` and ``prepare_loadout`` are those of :mod:`pi_builtin_tools.codemode.python`,
    imported by their first use."""
    return ToolDefinition(
        name=CODEMODE_PYTHON_TOOL_NAME,
        label=CODEMODE_PYTHON_TOOL_NAME,
        description=CODEMODE_PYTHON_DESCRIPTION,
        parameters=CODEMODE_PYTHON_PARAMETERS,
        execute=_execute_from("pi_builtin_tools.codemode.python", "execute_codemode_python"),
        prompt_snippet="Run Python that calls other tools",
        prompt_guidelines=[
            "Use codemode_python to batch independent tool calls (asyncio.gather), chain them, "
            "or filter large output, instead of many separate calls."
        ],
        exposure="model-only",
        default_active=False,
        prepare_loadout=_prepare_loadout_from(
            "pi_builtin_tools.codemode.python", "prepare_codemode_python_loadout"
        ),
        constrained_sampling={
            "type": "grammar",
            "variants": {"openai_lark": CODEMODE_PYTHON_SOURCE_GRAMMAR},
        },
    )


# ---------------------------------------------------------------------------------------------
# tool_search
# ---------------------------------------------------------------------------------------------

TOOL_SEARCH_TOOL_NAME = "tool_search"
DEFAULT_TOOL_SEARCH_LIMIT = 8

TOOL_SEARCH_DESCRIPTION = (
    "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching "
    "tools for the next model call.\n\nSome of the tools, such as tools of MCP servers, may not "
    "have been provided to you upfront, and you should use this tool (`tool_search`) to search "
    "for the required tools. For MCP tool discovery, always use `tool_search`."
)

TOOL_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Search query for deferred tools."},
        "limit": {
            "type": "number",
            "description": (
                f"Maximum number of tools to return. Defaults to {DEFAULT_TOOL_SEARCH_LIMIT}."
            ),
        },
    },
    "required": ["query"],
}


def create_tool_search_tool_definition() -> ToolDefinition:
    """The ``tool_search`` :class:`~pi_core.ToolDefinition` (inactive, ``model-only``).
    ``execute`` is :func:`pi_builtin_tools.catalog.tool_search.execute_tool_search`, imported by the
    first call."""
    return ToolDefinition(
        name=TOOL_SEARCH_TOOL_NAME,
        label=TOOL_SEARCH_TOOL_NAME,
        description=TOOL_SEARCH_DESCRIPTION,
        parameters=TOOL_SEARCH_PARAMETERS,
        execute=_execute_from("pi_builtin_tools.catalog.tool_search", "execute_tool_search"),
        prompt_snippet="Search for tools that are not loaded yet and load the matches",
        exposure="model-only",
        default_active=False,
        replay="safe",
    )


__all__ = [
    "CODEMODE_DESCRIPTION",
    "CODEMODE_DESCRIPTION_GLOBALS",
    "CODEMODE_DESCRIPTION_INTRO",
    "CODEMODE_PARAMETERS",
    "CODEMODE_PROMPT_GUIDELINES",
    "CODEMODE_PROMPT_SNIPPET",
    "CODEMODE_PYTHON_DESCRIPTION",
    "CODEMODE_PYTHON_PARAMETERS",
    "CODEMODE_PYTHON_SOURCE_GRAMMAR",
    "CODEMODE_PYTHON_TOOL_NAME",
    "CODEMODE_SOURCE_GRAMMAR",
    "CODEMODE_TOOL_NAME",
    "DEFAULT_TOOL_SEARCH_LIMIT",
    "TOOL_SEARCH_DESCRIPTION",
    "TOOL_SEARCH_PARAMETERS",
    "TOOL_SEARCH_TOOL_NAME",
    "create_codemode_python_tool_definition",
    "create_codemode_tool_definition",
    "create_tool_search_tool_definition",
]
