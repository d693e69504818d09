"""Where a session's network rules come from, and how its proxy meets the session.

The rules, in order (a deny anywhere wins: see
:meth:`~pi_sandbox_plugin.network.rules.NetworkPolicy.decide`):

* ``[sandbox.network] deny`` and ``allow`` (source ``sandbox.network.deny`` /
  ``sandbox.network.allow``);
* the ``network_rule``\\ s of the Codex ``.rules`` files of ``[sandbox.codex_rules]`` (source
  ``codex rule FILE:LINE``): ``allow`` allows, ``prompt`` asks, ``forbidden`` denies, for the
  rule's protocol only (``http``: plain-HTTP requests, ``https``: ``CONNECT`` tunnels,
  ``socks5_tcp``: SOCKS5);
* ``sandbox.network.allowedDomains`` and ``deniedDomains`` of the Claude Code settings files of
  ``[sandbox.claude_hooks] settings`` (source ``claude settings FILE``), with Claude Code's
  syntax (``*.example.com``, an optional ``:port``), which is this policy's.

A plugin decides first (``pi_network_request``, :func:`session_hook`): its verdict's rule is
``plugin NAME: REASON``; ``None`` lets the lists decide.

``ask`` goes to the session's approval path (:func:`session_asker`): the terminal prompt or the
program's callback (``pi_approve_tool_call`` plugins answer through it), nobody: deny; an
answer lasts for the session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from pi_core import ApprovalRequest, ConfigError, NetworkRequestContext, parse_json
from pi_sandbox_plugin.network.proxy import Asker, Hook, NetworkProxy
from pi_sandbox_plugin.network.rules import (
    Destination,
    NetworkPolicy,
    NetworkRule,
    Verdict,
    parse_rule,
)
from pi_sandbox_plugin.settings.config import SANDBOX_TABLE, SandboxConfig

CODEX_DECISIONS = {"allow": "allow", "prompt": "ask", "forbidden": "deny"}
"""A Codex ``network_rule`` decision as this policy's."""


def codex_network_rules(codex: Any) -> list[NetworkRule]:
    """The rules of a loaded :class:`~pi_sandbox_plugin.interop.codex_rules.CodexRules`'
    ``network_rule`` calls."""
    return [
        parse_rule(
            rule.host,
            CODEX_DECISIONS[rule.decision],  # type: ignore[arg-type]
            f"codex rule {rule.file}:{rule.line}",
            protocols=[rule.protocol],
        )
        for rule in codex.network_rules
    ]


def claude_network_rules(settings: Sequence[str], cwd: str) -> list[NetworkRule]:
    """The ``sandbox.network.deniedDomains`` and ``allowedDomains`` of Claude Code settings
    files (relative to ``cwd``; a missing file has none). :class:`~pi_core.ConfigError`
    naming the file and entry for one that is not an entry."""
    rules: list[NetworkRule] = []
    for name in settings:
        path = os.path.join(cwd, os.path.expanduser(name))
        try:
            with open(path, encoding="utf-8") as handle:
                data = parse_json(handle.read())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as error:
            raise ConfigError(f"{name}: cannot read the Claude Code settings: {error}") from None
        network = data.get("sandbox", {}).get("network", {}) if isinstance(data, dict) else {}
        for key, decision in (("deniedDomains", "deny"), ("allowedDomains", "allow")):
            entries = network.get(key, []) if isinstance(network, dict) else []
            for index, entry in enumerate(entries if isinstance(entries, list) else [entries]):
                try:
                    rules.append(
                        parse_rule(str(entry), decision, f"claude settings {name}")  # type: ignore[arg-type]
                    )
                except ValueError as error:
                    raise ConfigError(f"{name}: sandbox.network.{key}[{index}]: {error}") from None
    return rules


def network_policy(sandbox: SandboxConfig, cwd: str) -> NetworkPolicy:
    """The :class:`NetworkPolicy` of ``sandbox`` for a session in ``cwd`` (see the module)."""
    network = sandbox.network
    rules: list[NetworkRule] = []
    if network is not None:
        rules += [parse_rule(e, "deny", f"{SANDBOX_TABLE}.network.deny") for e in network.deny]
        rules += [parse_rule(e, "allow", f"{SANDBOX_TABLE}.network.allow") for e in network.allow]
    if sandbox.codex_rules is not None and sandbox.codex_rules.files:
        from pi_sandbox_plugin.interop.codex_rules import load_codex_rules

        files = sandbox.codex_rules.files
        codex = load_codex_rules(
            [os.path.join(cwd, os.path.expanduser(f)) for f in files], display_names=list(files)
        )
        rules += codex_network_rules(codex)
    if sandbox.claude_hooks is not None:
        rules += claude_network_rules(sandbox.claude_hooks.settings, cwd)
    unknown = network.unknown if network is not None else "deny"
    return NetworkPolicy(tuple(rules), unknown)


def session_asker(session: Any) -> Asker:
    """``ask`` through ``session``'s approvals (a :class:`~pi_core.SessionContext`): the
    request shows ``network {"host", "port", "protocol"}``; ``always`` is remembered by the
    approvals, and the proxy remembers every answer for the session."""

    async def ask(destination: Destination, verdict: Verdict, tool_call_id: str | None) -> Verdict:
        request = ApprovalRequest(
            tool_name="network",
            arguments={
                "host": destination.host,
                "port": destination.port,
                "protocol": destination.protocol,
            },
            tool_call_id=tool_call_id or "",
            reason=f"a connection to {destination} ({verdict.rule})",
            source="sandbox.network",
            key=json.dumps(["network", destination.host, destination.port]),
        )
        outcome = await session.approvals.decide(request)
        if outcome.allowed:
            return Verdict("allow", f"{verdict.rule}; approved ({outcome.answer})")
        why = "nobody to ask" if outcome.answer == "none" else f"not approved ({outcome.answer})"
        return Verdict("deny", f"{verdict.rule}; {why}")

    return ask


def session_hook(session: Any) -> Hook:
    """The plugins' ``pi_network_request`` through ``session.network_request`` (set by
    :func:`~pi_core.build_session`; none: no plugin decides): a decision becomes a verdict whose
    rule is ``plugin NAME: REASON``."""

    async def hook(destination: Destination, tool_call_id: str | None) -> Verdict | None:
        ask_plugins = getattr(session, "network_request", None)
        if ask_plugins is None:
            return None
        context = NetworkRequestContext(
            host=destination.host,
            port=destination.port,
            protocol=destination.protocol,
            tool_call_id=tool_call_id,
            session=session,
        )
        plugin, decided = await ask_plugins(context)
        if decided is None:
            return None
        rule = f"plugin {plugin}: {decided.reason}" if decided.reason else f"plugin {plugin}"
        return Verdict(decided.decision, rule)

    return hook


def attach_session(proxy: NetworkProxy, session: Any) -> None:
    """Let ``proxy`` write ``session``'s audit log (its id on each line), ask the plugins
    (``pi_network_request``) and ask through the session's approvals; once per session (the
    first session attached keeps it)."""
    if session is None or proxy.session_id:
        return
    proxy.session_id = session.session_id
    proxy.audit_source = session
    proxy.ask = session_asker(session)
    proxy.hook = session_hook(session)


__all__ = [
    "CODEX_DECISIONS",
    "attach_session",
    "claude_network_rules",
    "codex_network_rules",
    "network_policy",
    "session_asker",
    "session_hook",
]
