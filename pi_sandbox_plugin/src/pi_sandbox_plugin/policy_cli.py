"""``pi policy check "COMMAND" [--json]``: what the command policy decides.

The logic of the command, without argument parsing (the ``pi`` CLI wires it in):
:func:`run_policy_check` returns the exit code and the text for stdout.

Plain output::

    decision: deny
    rule: ["rm"]
    reason: rule ["rm"] denies `rm -rf build`
    commands:
      ["rm", "-rf", "build"]

``--json`` prints one line: ``{"decision": "allow"|"deny", "rule": [...] | null, "reason": ...,
"commands": [[argv...], ...]}``. Exit status 0 for allow, 1 for deny.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pi_sandbox_plugin.command_policy import CommandPolicy, Decision, format_rule
from pi_sandbox_plugin.config import load_sandbox_config


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


def run_policy_check(
    command: str,
    config: Mapping[str, Any],
    *,
    json_output: bool,
    config_path: str | os.PathLike[str] | None,
) -> tuple[int, str]:
    """Decide ``command`` under the policy of ``config``; returns ``(exit_code, stdout)``:
    0 for allow, 1 for deny. ``config_path`` names the file in errors. Raises
    :class:`~pi_core._errors.ConfigError` for a bad ``[sandbox]`` table (including a failing
    ``[sandbox.policy.tests]`` line)."""
    decision = policy_for(config, config_path).check(command)
    return (0 if decision.allowed else 1), format_decision(decision, json_output=json_output)


__all__ = ["format_decision", "policy_for", "run_policy_check"]
