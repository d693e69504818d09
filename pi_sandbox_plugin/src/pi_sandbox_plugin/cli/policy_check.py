"""``pi policy check "COMMAND" [--json]``: what every configured policy source decides about a
bash call running COMMAND, and which source decided.

The logic of the command, without argument parsing (the ``pi`` CLI wires it in):
:func:`run_policy_check` returns the exit code and the text for stdout.

Plain output with only the command policy configured::

    decision: deny
    rule: ["rm"]
    reason: rule ["rm"] denies `rm -rf build`
    commands:
      ["rm", "-rf", "build"]

With Codex rules or Claude Code hooks, two more parts follow: ``decided by: SOURCE`` and
``sources:``, one line per source (``  SOURCE: DECISION: REASON``), each hook that ran with its
exit code and the JSON it printed (``    hook CMD: exit 2, JSON null``).

``--json`` prints one line: ``{"decision": "allow"|"deny"|"ask", "rule": [...] | null,
"reason": ..., "commands": [[argv...], ...]}``, and with Codex rules or Claude Code hooks also
``"decided_by": SOURCE | null, "sources": [{"source", "decision", "reason", "detail"}, ...]``.
Exit status 0 for allow, 1 for deny, 4 for ask.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

import trio

from pi_core import CallCheck, ToolDefinition, build_session, hookimpl
from pi_sandbox_plugin.interop.policy_sources import (
    CallVerdict,
    LoadedPolicies,
    judge_call,
    load_policies,
)
from pi_sandbox_plugin.policies.command_policy import CommandPolicy, Decision, format_rule
from pi_sandbox_plugin.settings.config import PolicyConfig, SandboxConfig, load_sandbox_config


def policy_for(
    config: Mapping[str, Any], config_path: str | os.PathLike[str] | None
) -> CommandPolicy:
    """The command policy of ``config`` (the loaded TOML dict); without ``[sandbox.policy]``,
    a policy with no rules (only what is undecidable is denied). Raises
    :class:`~pi_core._errors.ConfigError` for a bad ``[sandbox]`` table."""
    sandbox = load_sandbox_config(config, config_path)
    if sandbox is None or sandbox.policy is None:
        return CommandPolicy()
    return sandbox.policy.command_policy()


def format_decision(decision: Decision, *, json_output: bool) -> str:
    """The text ``pi policy check`` prints for ``decision`` (ends with a newline)."""
    if json_output:
        return json.dumps(decision.to_json_dict(), ensure_ascii=False) + "\n"
    lines = [
        f"decision: {decision.decision}",
        f"rule: {format_rule(decision.rule) if decision.rule is not None else '-'}",
        f"reason: {decision.reason}",
        "commands:" if decision.commands else "commands: (none)",
    ]
    lines.extend(f"  {json.dumps(argv, ensure_ascii=False)}" for argv in decision.commands)
    return "\n".join(lines) + "\n"


class _CommandTool:
    """What the sources judge in ``pi policy check``: a call of a tool named ``bash`` whose
    ``command`` argument is the checked line (the tool Claude Code hooks know as ``Bash``)."""

    name = "bash"
    command_argument = "command"
    path_arguments: tuple[str, ...] = ()


async def judge_command(
    command: str,
    sandbox: SandboxConfig,
    *,
    cwd: str,
    config_file: str,
    policies: LoadedPolicies | None = None,
) -> CallVerdict:
    """Every configured source's decision on a bash call running ``command`` (the command
    policy always takes part: without ``[sandbox.policy]``, one with no rules). ``policies``:
    the rule files and hooks already loaded (loaded from ``sandbox`` when ``None``)."""
    if sandbox.policy is None:
        sandbox = sandbox.model_copy(update={"policy": PolicyConfig()})
    if policies is None:
        policies = load_policies(sandbox, cwd, config_file)
    verdict, _ = await judge_call(
        tool=_CommandTool(),
        args={"command": command},
        tool_call_id="policy-check",
        sandbox=sandbox,
        policies=policies,
        cwd=cwd,
        session_id="policy-check-" + uuid.uuid4().hex,
    )
    return verdict


def _plain_sources(decided_by: str | None, sources: list[dict[str, Any]]) -> list[str]:
    lines = [f"decided by: {decided_by or '-'}", "sources:"]
    for source in sources:
        lines.append(f"  {source['source']}: {source['decision']}: {source['reason']}")
        for run in (source.get("detail") or {}).get("hooks", ()):
            shown = json.dumps(run.get("stdout_json"), ensure_ascii=False)
            lines.append(
                f"    hook {run.get('command')}: exit {run.get('exit_code')}, JSON {shown}"
            )
    return lines


EXIT_STATUS = {"allow": 0, "deny": 1, "ask": 4}
"""``pi policy check``'s exit status for each decision."""


def run_policy_check(
    command: str,
    config: Mapping[str, Any],
    *,
    json_output: bool,
    config_path: str | os.PathLike[str] | None,
    cwd: str | os.PathLike[str] | None = None,
    plugin_manager: Any = None,
) -> tuple[int, str]:
    """Decide a ``bash`` call running ``command`` as ``pi call`` would, through the same hooks
    (:meth:`pi_core.Session.check_call`): every policy source of the sandbox and every other
    plugin's ``pi_before_tool_call``/``pi_approve_tool_call``. Returns ``(exit_code, stdout)``:
    0 for allow, 1 for deny, 4 for ask. ``plugin_manager``: the plugins of the session
    (default: the sandbox plugin alone); ``cwd``: the session's working directory (default: the
    process's). ``config_path`` names the file in errors. Raises
    :class:`~pi_core._errors.ConfigError` for a bad ``[sandbox]`` table (including a failing
    ``[sandbox.policy.tests]`` line, a rule file that does not load, a bad hook).

    The output keeps the command policy's fields (``decision``, ``rule``, ``reason``,
    ``commands``: the rule and the simple commands the parser found; ``decision`` and
    ``reason`` are the overall ones) and, when a source other than the command policy took
    part, adds ``decided_by`` (the deciding source or plugin, ``null`` when none) and
    ``sources`` (each of the sandbox's sources: decision, reason and detail, a hook's exit code
    and the JSON it printed, the Codex rule that matched)."""
    sandbox = load_sandbox_config(config, config_path)  # a bad table is reported first
    has_policy = sandbox is not None and sandbox.policy is not None
    decision = policy_for(config, config_path).check(command)
    where = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
    pm = plugin_manager if plugin_manager is not None else _sandbox_plugin_only()
    # the loaded config itself (a dict that knows its file, which warnings name), not a copy
    table = config if isinstance(config, dict) else dict(config)
    check = trio.run(_check_bash_call, pm, command, table, where)
    status = EXIT_STATUS[check.decision]
    sources = (check.detail or {}).get("sources", [])
    compact = check.source in (None, "command policy") and all(
        s["source"] == "command policy" for s in sources
    )
    data = decision.to_json_dict()
    own = check.source == "command policy" or (check.source is None and has_policy)
    if not own:  # another source decided, or none (no policy: pi call runs the line)
        data["reason"] = check.reason
        if check.source is None:
            data["rule"] = None
    data["decision"] = check.decision
    if json_output:
        if not compact:
            data["decided_by"] = check.source
            data["sources"] = sources
        return status, json.dumps(data, ensure_ascii=False) + "\n"
    lines = _plain_fields(data)
    if not compact:
        lines += _plain_sources(check.source, sources)
    return status, "\n".join(lines) + "\n"


def _plain_fields(data: dict[str, Any]) -> list[str]:
    rule = data["rule"]
    lines = [
        f"decision: {data['decision']}",
        f"rule: {format_rule(rule) if rule is not None else '-'}",
        f"reason: {data['reason']}",
        "commands:" if data["commands"] else "commands: (none)",
    ]
    lines.extend(f"  {json.dumps(argv, ensure_ascii=False)}" for argv in data["commands"])
    return lines


def _sandbox_plugin_only() -> Any:
    import pi_sandbox_plugin.plugin as sandbox_plugin
    from pi_core import make_plugin_manager

    pm = make_plugin_manager(autoload=False)
    pm.register(sandbox_plugin, name="sandbox")
    return pm


class _StandInBash:
    """The session's ``bash`` when no plugin registers one (pi's built-in tools not loaded):
    declared as the built-in one is (a ``command`` argument holding a shell command), never
    run."""

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(
            ToolDefinition(
                name="bash",
                label="bash",
                description="a shell command (pi policy check's stand-in)",
                parameters={
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                },
                execute=_never_run,
                command_argument="command",
            )
        )


async def _never_run(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("pi policy check never runs a call")


async def _check_bash_call(pm: Any, command: str, config: dict[str, Any], cwd: str) -> CallCheck:
    session = build_session(pm, cwd, config, host="tools")
    if "bash" not in session.tools_by_name:
        if pm.get_plugin("pi-policy-check-bash") is None:
            pm.register(_StandInBash(), name="pi-policy-check-bash")
        session = build_session(pm, cwd, config, host="tools")
    try:
        return await session.check_call("bash", {"command": command}, tool_call_id="policy-check")
    finally:
        audit = session.session_context.audit
        if audit is not None:
            await audit.aclose()


__all__ = ["EXIT_STATUS", "format_decision", "judge_command", "policy_for", "run_policy_check"]
