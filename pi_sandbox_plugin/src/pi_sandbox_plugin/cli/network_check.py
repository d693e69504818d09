"""``pi policy check --network HOST[:PORT] [--protocol P] [--json]``: what the session's network
policy decides about a connection, and which rule decided.

Plain output::

    decision: deny
    destination: example.com:443
    protocol: https
    rule: not in sandbox.network.allow

``--json`` prints ``{"decision", "host", "port", "protocol", "rule"}``. Exit status 0 for
allow, 1 for deny, 4 for ask (as for a command). The check judges the name as written: the
addresses it resolves to are checked against the IP and CIDR deny rules when a command
connects, not here (no DNS query is made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pi_sandbox_plugin.cli.policy_check import EXIT_STATUS
from pi_sandbox_plugin.network.rules import Destination, normalize_host, split_port
from pi_sandbox_plugin.network.sources import network_policy
from pi_sandbox_plugin.settings.config import SandboxConfig, load_sandbox_config


def parse_destination(text: str, protocol: str) -> Destination:
    """The destination of ``HOST[:PORT]`` (``[IPV6]:PORT``; default port 443); ``ValueError``
    naming the problem."""
    host, port = split_port(text.strip())
    return Destination(normalize_host(host), 443 if port is None else port, protocol)


def run_network_check(
    target: str,
    protocol: str,
    config: Mapping[str, Any],
    *,
    json_output: bool,
    config_path: str | os.PathLike[str] | None,
) -> tuple[int, str]:
    """``(exit status, stdout)`` of the check of ``target`` (see the module); ``ValueError``
    for a target that is not ``HOST[:PORT]``, :class:`~pi_core.ConfigError` for a bad
    ``[sandbox]`` table."""
    destination = parse_destination(target, protocol)
    sandbox = load_sandbox_config(config, config_path) or SandboxConfig()
    if sandbox.network_mode == "allow-list":
        verdict = network_policy(sandbox, os.getcwd()).decide(destination)
        decision, rule = verdict.decision, verdict.rule
    elif sandbox.network_mode == "on":
        decision, rule = "allow", 'sandbox.network.mode = "on"'
    else:
        decision, rule = "deny", 'sandbox.network.mode = "off"'
    if json_output:
        data = {
            "decision": decision,
            "host": destination.host,
            "port": destination.port,
            "protocol": protocol,
            "rule": rule,
        }
        return EXIT_STATUS[decision], json.dumps(data, ensure_ascii=False) + "\n"
    text = f"decision: {decision}\ndestination: {destination}\nprotocol: {protocol}\nrule: {rule}\n"
    return EXIT_STATUS[decision], text


__all__ = ["parse_destination", "run_network_check"]
