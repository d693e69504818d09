"""The network policy's rules and decisions: which ``host:port`` a sandboxed command may reach.

An entry of ``[sandbox.network] allow``/``deny`` (or of another source: a Codex ``network_rule``)
is one of

=====================  =====================================================================
``pypi.org``           that host exactly (any port)
``*.pythonhosted.org`` every subdomain of it, not the apex itself
``127.0.0.1``          that IP address (IPv6 too: ``::1``, or ``[::1]:8080`` with a port)
``10.20.0.0/16``       every address of the range
``NAME:443``           any of the above limited to one port (no port: every port)
=====================  =====================================================================

Host names compare after IDNA normalisation (UTS #46, the ``idna`` library: ``BÜCHER.example``
is ``xn--bcher-kva.example``), in lower case, with one trailing dot removed. A destination
given as an IP literal matches only IP and CIDR entries; a destination given as a name matches
only host and ``*.suffix`` entries, and then every address it resolves to is checked against
the IP and CIDR *deny* entries (a name that resolves into a denied range is denied: no DNS
rebinding around them). Deny wins over allow; a destination on neither list gets the policy's
``unknown`` decision (``deny`` or ``ask``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Decision = Literal["allow", "deny", "ask"]
Protocol = Literal["http", "https", "socks5_tcp", "socks5_udp"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def normalize_host(name: str) -> str:
    """``name`` as rules and destinations compare it: one trailing dot removed, IDNA (UTS #46)
    ASCII form in lower case; an IP literal in its canonical text (``::1``). ``ValueError``
    (``not a valid host name: 'a..b'``) for anything else."""
    text = name.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if text.endswith("."):
        text = text[:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    import idna

    try:
        ascii_name = idna.encode(text, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        raise ValueError(f"not a valid host name: {name!r}") from None
    return ascii_name.lower()


def split_port(text: str) -> tuple[str, int | None]:
    """``(host, port)`` of ``HOST``, ``HOST:PORT``, ``[IPV6]``, ``[IPV6]:PORT`` or a bare
    IPv6 address/range (no port); ``ValueError`` for a bad port."""
    port_text: str | None = None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"a bracketed IPv6 address is [ADDRESS] or [ADDRESS]:PORT: {text!r}")
        host, port_text = inside, (rest[1:] if rest else None)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host = text
    if port_text is None:
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"a port is a number from 1 to 65535, not {port_text!r}")
    return host, int(port_text)


@dataclass(frozen=True)
class NetworkRule:
    """One entry: ``text`` as written, where it comes from (``source``: ``sandbox.network.allow``,
    ``codex rule FILE:LINE``, ...), its ``decision``, what it matches (``kind``: ``host``,
    ``suffix``, ``ip``; ``host`` the normalised name or suffix, ``network`` the address range),
    its ``port`` (``None``: every port) and ``protocols`` (empty: every protocol)."""

    text: str
    source: str
    decision: Decision
    kind: Literal["host", "suffix", "ip"]
    host: str = ""
    network: IPNetwork | None = None
    port: int | None = None
    protocols: frozenset[str] = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        """How a message names this rule: ``sandbox.network.deny "*.internal.example"``."""
        return f"{self.source} {self.text!r}"

    def applies(self, port: int, protocol: str) -> bool:
        """Whether the rule's port and protocols cover ``port`` and ``protocol``."""
        if self.port is not None and self.port != port:
            return False
        return not self.protocols or protocol in self.protocols

    def matches_name(self, host: str) -> bool:
        """Whether the normalised host name ``host`` is this rule's host or under its suffix."""
        if self.kind == "host":
            return host == self.host
        if self.kind == "suffix":
            return host.endswith("." + self.host)
        return False

    def matches_address(self, address: IPAddress) -> bool:
        """Whether ``address`` is in this rule's range."""
        return (
            self.network is not None
            and self.network.version == address.version
            and address in self.network
        )


def parse_rule(
    text: str,
    decision: Decision,
    source: str,
    protocols: Iterable[str] = (),
) -> NetworkRule:
    """The :class:`NetworkRule` of the entry ``text``; ``ValueError`` naming the problem (an
    empty entry, a URL, a bad port, a wildcard other than a leading ``*.``, an invalid name or
    range)."""
    raw = text.strip()
    if not raw:
        raise ValueError("an entry is a host, *.suffix, IP address or CIDR range, not empty")
    if "://" in raw or any(c in raw for c in "?#@ ") or ("/" in raw and raw.count("/") > 1):
        raise ValueError(f"an entry is a host, *.suffix, IP or CIDR (no scheme or path): {raw!r}")
    host, port = split_port(raw)
    kinds = frozenset(protocols)
    if "/" in host:
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ValueError(f"not a CIDR range: {host!r}") from None
        return NetworkRule(raw, source, decision, "ip", network=network, port=port, protocols=kinds)
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        network = ipaddress.ip_network(address)
        return NetworkRule(raw, source, decision, "ip", network=network, port=port, protocols=kinds)
    if host.startswith("*."):
        suffix = host[2:]
        if "*" in suffix or not suffix:
            raise ValueError(f"a wildcard is only a leading '*.': {raw!r}")
        return NetworkRule(
            raw, source, decision, "suffix", host=normalize_host(suffix), port=port, protocols=kinds
        )
    if "*" in host:
        raise ValueError(f"a wildcard is only a leading '*.': {raw!r}")
    return NetworkRule(
        raw, source, decision, "host", host=normalize_host(host), port=port, protocols=kinds
    )


@dataclass(frozen=True)
class Destination:
    """Where a connection goes: ``host`` as the client named it (normalised: a name or an IP
    literal's text), ``port``, ``protocol`` (``http``: a plain-HTTP request, ``https``: a
    ``CONNECT`` tunnel, ``socks5_tcp``)."""

    host: str
    port: int
    protocol: str = "https"

    @property
    def address(self) -> IPAddress | None:
        """The IP address when ``host`` is an IP literal, else ``None``."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Verdict:
    """A decision on a :class:`Destination`: ``decision``, ``rule`` (what decided, as a message
    names it: ``sandbox.network.allow 'pypi.org'``, ``not in sandbox.network.allow``, ``plugin
    NAME``) and ``reason`` (free text from a plugin, else ``""``)."""

    decision: Decision
    rule: str
    reason: str = ""


@dataclass(frozen=True)
class NetworkPolicy:
    """The ordered rules of every source and what a destination on none of them gets
    (``unknown``). :meth:`decide` judges one destination (see the module)."""

    rules: tuple[NetworkRule, ...] = ()
    unknown: Literal["deny", "ask"] = "deny"
    unknown_rule: str = "not in sandbox.network.allow"

    def _matching(self, destination: Destination) -> list[NetworkRule]:
        address = destination.address
        found = []
        for rule in self.rules:
            if not rule.applies(destination.port, destination.protocol):
                continue
            if address is not None:
                if rule.matches_address(address):
                    found.append(rule)
            elif rule.matches_name(destination.host):
                found.append(rule)
        return found

    def decide(self, destination: Destination, resolved: Sequence[IPAddress] = ()) -> Verdict:
        """The :class:`Verdict` on ``destination``; ``resolved``: the addresses its name
        resolved to, checked against the IP/CIDR deny rules. A deny rule wins, then ask, then
        allow; none: ``unknown``."""
        denied = self.address_denial(destination, resolved)
        if denied is not None:
            return denied
        matching = self._matching(destination)
        for decision in ("deny", "ask", "allow"):
            for rule in matching:
                if rule.decision == decision:
                    return Verdict(decision, rule.name)
        return Verdict(self.unknown, self.unknown_rule)

    def address_denial(
        self, destination: Destination, resolved: Sequence[IPAddress]
    ) -> Verdict | None:
        """The ``deny`` verdict of the first of ``resolved`` (the addresses the name of
        ``destination`` resolved to) in a denied IP or CIDR range, else ``None``."""
        for address in resolved:
            for rule in self.rules:
                if (
                    rule.decision == "deny"
                    and rule.applies(destination.port, destination.protocol)
                    and rule.matches_address(address)
                ):
                    return Verdict("deny", f"{rule.name}, {destination.host} is {address}")
        return None


def blocked_message(destination: Destination, rule: str) -> str:
    """The text a denied connection gets: ``blocked by pi network policy: HOST:PORT is not
    allowed (RULE)``."""
    return f"blocked by pi network policy: {destination} is not allowed ({rule})"


__all__ = [
    "Decision",
    "Destination",
    "NetworkPolicy",
    "NetworkRule",
    "Verdict",
    "blocked_message",
    "normalize_host",
    "parse_rule",
    "split_port",
]
