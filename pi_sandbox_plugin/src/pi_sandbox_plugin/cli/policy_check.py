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

import functools
import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

import trio

from pi_core import config_file
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


def _plain_sources(verdict: CallVerdict) -> list[str]:
    lines = [f"decided by: {verdict.decided_by.source if verdict.decided_by else '-'}", "sources:"]
    for source in verdict.sources:
        lines.append(f"  {source.source}: {source.decision}: {source.reason}")
        for run in source.detail.get("hooks", ()):
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
) -> tuple[int, str]:
    """Decide ``command`` under every source ``config`` configures; returns ``(exit_code,
    stdout)``: 0 for allow, 1 for deny, 4 for ask. ``config_path`` names the file in errors.
    Raises :class:`~pi_core._errors.ConfigError` for a bad ``[sandbox]`` table (including a
    failing ``[sandbox.policy.tests]`` line, a rule file that does not load, a bad hook).

    The output keeps the command policy's fields (``decision``, ``rule``, ``reason``,
    ``commands``; ``decision`` is the overall one) and adds ``decided_by`` (the deciding
    source, ``null`` when none) and ``sources`` (each source's decision, reason and detail:
    a hook's exit code and the JSON it printed, the Codex rule that matched)."""
    sandbox = load_sandbox_config(config, config_path)
    policy = policy_for(config, config_path)
    decision = policy.check(command)
    if sandbox is None:
        sandbox = SandboxConfig()
    file = os.fspath(config_path) if config_path is not None else config_file(config)
    verdict = trio.run(
        functools.partial(judge_command, command, sandbox, cwd=os.getcwd(), config_file=file)
    )
    overall = verdict.decision
    decided = verdict.decided_by
    reason = decision.reason
    if decided is not None and decided.source != "command policy":
        reason = decided.reason
    status = EXIT_STATUS[overall]
    only_command_policy = [s.source for s in verdict.sources] == ["command policy"]
    if json_output:
        data = decision.to_json_dict()
        if only_command_policy:  # the command policy's own output, unchanged
            return status, json.dumps(data, ensure_ascii=False) + "\n"
        data["decision"] = overall
        data["reason"] = reason
        data["decided_by"] = decided.source if decided is not None else None
        data["sources"] = [s.to_json_dict() for s in verdict.sources]
        return status, json.dumps(data, ensure_ascii=False) + "\n"
    text = format_decision(decision, json_output=False)
    if only_command_policy:
        return status, text
    lines = text.splitlines()
    lines[0] = f"decision: {overall}"
    lines[2] = f"reason: {reason}"
    return status, "\n".join([*lines, *_plain_sources(verdict)]) + "\n"


__all__ = ["EXIT_STATUS", "format_decision", "judge_command", "policy_for", "run_policy_check"]
