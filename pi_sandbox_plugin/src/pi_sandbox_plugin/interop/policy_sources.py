"""Every configured policy source judging one tool call, and the decision they make together.

The sources, in the order they are asked:

1. **Claude Code hooks** (``[sandbox.claude_hooks]``,
   :mod:`pi_sandbox_plugin.interop.claude_hooks`):
   the ``PreToolUse`` hooks whose matcher matches the call's Claude Code tool name run first,
   because an ``updatedInput`` changes the call: the new arguments are mapped back to pi's,
   validated against the tool's schema (invalid: the call is blocked, naming the hook), and
   every later source judges the *new* arguments.
2. **Codex rules** (``[sandbox.codex_rules]``, :mod:`pi_sandbox_plugin.interop.codex_rules`): for a
   tool that declares a ``command_argument`` (bash), every simple command of the line.
3. **The command policy** (``[sandbox.policy]``): for the same tools, unless Codex rules
   decided every simple command of the line (a command no rule matches falls through to it).
4. **The path policy** (``[sandbox.policy]`` roots and denied paths): for tools that declare
   ``path_arguments``.

Each gives a :class:`SourceDecision`: ``deny``, ``ask``, ``allow`` or ``none`` (no opinion).
Together: the first ``deny`` decides; else the first ``ask`` (the call goes to a person,
:func:`pi_core.request_approval`); else the call is allowed, and the first source that said
``allow`` is named as deciding. A hook's ``allow`` never overrides a rule's ``deny`` or ``ask``
(as in Claude Code, where ``allow`` only skips the prompt).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_sandbox_plugin.settings.config import SandboxConfig

Verdict = Literal["allow", "deny", "ask", "none"]

POLICIES_STATE_KEY = "sandbox.policies"
"""The session-state entry holding the loaded :class:`LoadedPolicies`."""


@dataclass(frozen=True)
class SourceDecision:
    """What one source decided about a call: ``source`` (``claude hook COMMAND``, ``codex rule
    FILE:LINE``, ``command policy``, ``path policy``), ``decision``, ``reason`` (one line) and
    ``detail`` (JSON-ready facts: the hook's exit code and JSON, the matched rule)."""

    source: str
    decision: Verdict
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"source", "decision", "reason", "detail"}``."""
        return {
            "source": self.source,
            "decision": self.decision,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class CallVerdict:
    """The sources' decision together: ``decision`` (``allow``, ``deny`` or ``ask``),
    ``decided_by`` (``None`` when nothing had an opinion), every source's decision in the
    order asked, and what the Claude Code hooks added: ``additional_context`` for the tool
    result."""

    decision: Literal["allow", "deny", "ask"]
    decided_by: SourceDecision | None
    sources: list[SourceDecision]
    additional_context: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"decision", "decided_by", "sources"}`` (for ``pi policy check --json``)."""
        return {
            "decision": self.decision,
            "decided_by": self.decided_by.to_json_dict() if self.decided_by else None,
            "sources": [s.to_json_dict() for s in self.sources],
        }


@dataclass
class LoadedPolicies:
    """The session's loaded rule files and hooks (``None`` for what is not configured)."""

    codex_rules: Any = None
    claude_hooks: Any = None


def _resolve(cwd: str, path: str) -> str:
    return os.path.join(cwd, os.path.expanduser(path))


def load_policies(sandbox: SandboxConfig, cwd: str, config_file: str) -> LoadedPolicies:
    """Load the Codex rule files and the Claude Code hooks ``sandbox`` names (paths relative to
    ``cwd``). Raises :class:`~pi_core.ConfigError` (naming the file and line, or the key) for a
    file that cannot be read or loaded, a failing ``match``/``not_match`` example, a bad hook."""
    loaded = LoadedPolicies()
    if sandbox.codex_rules is not None and sandbox.codex_rules.files:
        from pi_sandbox_plugin.interop.codex_rules import load_codex_rules

        files = sandbox.codex_rules.files
        loaded.codex_rules = load_codex_rules(
            [_resolve(cwd, f) for f in files], display_names=list(files)
        )
    if sandbox.claude_hooks is not None:
        from pi_sandbox_plugin.interop.claude_hooks import ClaudeHookSet

        hooks = sandbox.claude_hooks
        loaded.claude_hooks = ClaudeHookSet.from_settings(
            hooks.settings, hooks.inline(), cwd=cwd, source_name=config_file
        )
    return loaded


def session_policies(
    sandbox: SandboxConfig, cwd: str, state: dict[str, Any] | None, config_file: str
) -> LoadedPolicies:
    """The policies of a session, loaded once and kept in its ``state`` (loaded again for each
    call when there is no session state)."""
    if state is not None:
        cached = state.get(POLICIES_STATE_KEY)
        if isinstance(cached, tuple) and cached[0] is sandbox:
            return cached[1]
    loaded = load_policies(sandbox, cwd, config_file)
    if state is not None:
        state[POLICIES_STATE_KEY] = (sandbox, loaded)
    return loaded


CODEX_RULES_FILE = "a Codex rules file pi loaded"
CLAUDE_SETTINGS_FILE = "a Claude Code settings file pi loaded"
CLAUDE_HOOK_SCRIPT = "a Claude Code hook script pi runs"


def hook_scripts(command: str, cwd: str) -> list[str]:
    """The files a Claude Code hook ``command`` names: each word of it (shell quoting removed,
    ``$CLAUDE_PROJECT_DIR`` and ``~`` expanded, relative to ``cwd``) that is an existing
    regular file (``"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh``, ``python3 hooks/x.py``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    found = []
    for word in words:
        word = word.replace("${CLAUDE_PROJECT_DIR}", cwd).replace("$CLAUDE_PROJECT_DIR", cwd)
        path = os.path.join(cwd, os.path.expanduser(word))
        if word and os.path.isfile(path):
            found.append(path)
    return found


def protect_policy_files(
    sandbox: SandboxConfig, cwd: str, loaded: LoadedPolicies, session: Any
) -> None:
    """Add the files the session's policies came from to its
    :attr:`~pi_core.SessionContext.protected_files` (``session``: the pi session's context):
    the Codex rules files, the Claude Code settings files and the hook scripts their commands
    (and the inline ones) name. Read-only: the agent may read them, not change them."""
    if sandbox.codex_rules is not None:
        for name in sandbox.codex_rules.files:
            session.protect(_resolve(cwd, name), CODEX_RULES_FILE)
    if sandbox.claude_hooks is not None:
        for name in sandbox.claude_hooks.settings:
            session.protect(_resolve(cwd, name), CLAUDE_SETTINGS_FILE)
    hooks = loaded.claude_hooks
    if hooks is not None:
        for group in (*hooks.pre_tool_use, *hooks.post_tool_use):
            for hook in group.hooks:
                for script in hook_scripts(hook.command, cwd):
                    session.protect(script, CLAUDE_HOOK_SCRIPT)


def _command_of(tool: Any, args: Any) -> str | None:
    argument = getattr(tool, "command_argument", None)
    if argument is None:
        return None
    value = args.get(argument) if isinstance(args, Mapping) else getattr(args, argument, None)
    return value if isinstance(value, str) else ""


def codex_decision(rules: Any, command: str, cwd: str | None = None) -> tuple[SourceDecision, bool]:
    """The Codex rules' decision on ``command`` and whether they decided every simple command
    (else pi's command policy judges the line too)."""
    verdict = rules.check_command_line(command, cwd=cwd)
    match = verdict.deciding
    if verdict.decision is None:
        return SourceDecision("codex rules", "none", verdict.reason, _codex_detail(verdict)), False
    source = f"codex rule {match.file}:{match.line}" if match is not None else "codex rules"
    verdicts: dict[str, Verdict] = {"forbidden": "deny", "prompt": "ask", "allow": "allow"}
    mapped = verdicts[verdict.decision]
    reason = verdict.reason
    every_part = all(part[1].decision is not None for part in verdict.parts) and not (
        verdict.undecidable
    )
    return SourceDecision(source, mapped, reason, _codex_detail(verdict)), every_part


def _codex_detail(verdict: Any) -> dict[str, Any]:
    return {
        "commands": [
            {"argv": list(argv), "decision": part.decision} for argv, part in verdict.parts
        ],
        **({"undecidable": list(verdict.undecidable)} if verdict.undecidable else {}),
        **(
            {
                "matched_prefix": list(verdict.deciding.matched_prefix),
                "rule_decision": verdict.deciding.decision,
            }
            if verdict.deciding is not None
            else {}
        ),
    }


def command_policy_decision(sandbox: SandboxConfig, command: str) -> SourceDecision | None:
    """``[sandbox.policy]``'s decision on ``command`` (``None`` without a policy)."""
    if sandbox.policy is None:
        return None
    decision = sandbox.policy.command_policy().check(command)
    detail: dict[str, Any] = {"commands": [list(c) for c in decision.commands]}
    if decision.rule is not None:
        detail["rule"] = list(decision.rule)
    if decision.allowed:
        return SourceDecision("command policy", "none", decision.reason, detail)
    return SourceDecision("command policy", "deny", decision.block_reason(), detail)


async def judge_call(
    *,
    tool: Any,
    args: Any,
    tool_call_id: str,
    sandbox: SandboxConfig,
    policies: LoadedPolicies,
    cwd: str,
    session_id: str,
    replace_args: Callable[[Any], Any] | None = None,
    path_reason: Callable[[Any], str | None] | None = None,
    run_hooks: bool = True,
) -> tuple[CallVerdict, Any]:
    """Ask every configured source about a call of ``tool`` with ``args``; returns the
    :class:`CallVerdict` and the arguments it was judged on (a hook's ``updatedInput``,
    validated, replaces them through ``replace_args``, which raises for arguments that do not
    match the schema). ``path_reason(args)`` is the path policy's check (``None``: no path
    policy). Never raises for what a source decides; a hook that fails is a ``deny`` (or
    ignored, with ``on_error = "continue"``)."""
    sources: list[SourceDecision] = []
    context: list[str] = []
    hooks = policies.claude_hooks
    if hooks is not None and run_hooks:
        from pi_sandbox_plugin.interop.claude_hooks import run_pre_tool_use

        assert sandbox.claude_hooks is not None
        outcome = await run_pre_tool_use(
            hooks,
            tool_name=tool.name,
            args=args,
            tool_call_id=tool_call_id,
            session_id=session_id,
            cwd=cwd,
            on_error=sandbox.claude_hooks.on_error,
        )
        context.extend(outcome.additional_context)
        from pi_sandbox_plugin.interop.claude_hooks import claude_tool_name

        hook_decision = _hook_decision(outcome, claude_tool_name(tool.name, args))
        sources.append(hook_decision)
        if outcome.updated_input is not None and hook_decision.decision != "deny":
            try:
                args = (
                    replace_args(outcome.updated_input) if replace_args else outcome.updated_input
                )
            except Exception as e:
                source = _updating_hook(outcome) or "claude hooks"
                sources.append(
                    SourceDecision(
                        source,
                        "deny",
                        f"Blocked: the updatedInput of {source} does not match the schema of "
                        f"{tool.name}: {e}",
                        {"updated_input": outcome.updated_input},
                    )
                )
    command = _command_of(tool, args)
    if command is not None:
        decided_every_part = False
        if policies.codex_rules is not None:
            decision, decided_every_part = codex_decision(policies.codex_rules, command, cwd)
            sources.append(decision)
        if not decided_every_part:
            policy = command_policy_decision(sandbox, command)
            if policy is not None:
                sources.append(policy)
    if path_reason is not None:
        reason = path_reason(args)
        if reason is not None:
            sources.append(SourceDecision("path policy", "deny", reason))
    return _combine(sources, context), args


def _updating_hook(outcome: Any) -> str | None:
    """``claude hook COMMAND`` of the first hook that returned an ``updatedInput``."""
    for run in outcome.runs:
        output = run.stdout_json if isinstance(run.stdout_json, dict) else {}
        specific = output.get("hookSpecificOutput")
        if isinstance(specific, dict) and specific.get("updatedInput") is not None:
            return f"claude hook {run.command}"
    return None


def _hook_decision(outcome: Any, claude_name: str) -> SourceDecision:
    runs = [run.to_json_dict() for run in outcome.runs]
    if outcome.decision is None:
        if not outcome.runs:
            return SourceDecision(
                "claude hooks", "none", f"no PreToolUse hook matches {claude_name}"
            )
        return SourceDecision("claude hooks", "none", "no hook decided", {"hooks": runs})
    deciding = [r for r in outcome.runs if r.decision == outcome.decision]
    source = f"claude hook {deciding[0].command}" if deciding else "claude hooks"
    mapped: Verdict = "none" if outcome.decision == "defer" else outcome.decision
    reason = outcome.reason or f"{outcome.decision} by {source}"
    return SourceDecision(source, mapped, reason, {"hooks": runs})


def _combine(sources: Sequence[SourceDecision], context: list[str]) -> CallVerdict:
    for source in sources:
        if source.decision == "deny":
            return CallVerdict("deny", source, list(sources), context)
    for source in sources:
        if source.decision == "ask":
            return CallVerdict("ask", source, list(sources), context)
    allowed = next((s for s in sources if s.decision == "allow"), None)
    return CallVerdict("allow", allowed, list(sources), context)


def describe_sources(verdict: CallVerdict) -> dict[str, Any]:
    """The audit log's ``detail`` of a verdict: every source's decision."""
    return {"sources": [s.to_json_dict() for s in verdict.sources]}


__all__ = [
    "POLICIES_STATE_KEY",
    "CallVerdict",
    "LoadedPolicies",
    "SourceDecision",
    "command_policy_decision",
    "describe_sources",
    "hook_scripts",
    "judge_call",
    "load_policies",
    "protect_policy_files",
    "session_policies",
]
