"""The network policy (issue 25 point 1): ``[sandbox.network]`` entries, their matching and the
config errors naming the key."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core._errors import ConfigError
from pi_sandbox_plugin.network.rules import (
    Destination,
    NetworkPolicy,
    Verdict,
    blocked_message,
    normalize_host,
    parse_rule,
)
from pi_sandbox_plugin.settings.config import NetworkConfig, load_sandbox_config


def policy(allow: list[str], deny: list[str] = (), unknown: str = "deny") -> NetworkPolicy:  # type: ignore[assignment]
    rules = [parse_rule(t, "deny", "sandbox.network.deny") for t in deny]
    rules += [parse_rule(t, "allow", "sandbox.network.allow") for t in allow]
    return NetworkPolicy(tuple(rules), unknown)  # type: ignore[arg-type]


ISSUE = policy(
    ["pypi.org", "*.pythonhosted.org", "api.github.com:443", "10.20.0.0/16"],
    ["*.internal.example"],
)


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("pypi.org", 443, Verdict("allow", "sandbox.network.allow 'pypi.org'")),
        ("pypi.org", 80, Verdict("allow", "sandbox.network.allow 'pypi.org'")),
        ("PyPI.ORG.", 443, Verdict("allow", "sandbox.network.allow 'pypi.org'")),
        ("evil-pypi.org", 443, Verdict("deny", "not in sandbox.network.allow")),
        (
            "files.pythonhosted.org",
            443,
            Verdict("allow", "sandbox.network.allow '*.pythonhosted.org'"),
        ),
        (
            "a.b.pythonhosted.org",
            8080,
            Verdict("allow", "sandbox.network.allow '*.pythonhosted.org'"),
        ),
        ("pythonhosted.org", 443, Verdict("deny", "not in sandbox.network.allow")),
        ("api.github.com", 443, Verdict("allow", "sandbox.network.allow 'api.github.com:443'")),
        ("api.github.com", 80, Verdict("deny", "not in sandbox.network.allow")),
        ("10.20.3.4", 22, Verdict("allow", "sandbox.network.allow '10.20.0.0/16'")),
        ("10.21.0.1", 22, Verdict("deny", "not in sandbox.network.allow")),
        ("db.internal.example", 443, Verdict("deny", "sandbox.network.deny '*.internal.example'")),
    ],
)
def test_the_issue_example_decides(host: str, port: int, expected: Verdict) -> None:
    assert ISSUE.decide(Destination(normalize_host(host), port)) == expected


def test_deny_wins_over_allow_whatever_the_order() -> None:
    both = policy(["*.example.com"], ["secret.example.com"])
    assert both.decide(Destination("secret.example.com", 443)) == Verdict(
        "deny", "sandbox.network.deny 'secret.example.com'"
    )
    assert both.decide(Destination("www.example.com", 443)).decision == "allow"


def test_an_ip_literal_matches_only_ip_and_cidr_entries() -> None:
    named = policy(["localhost", "127.0.0.2"])
    assert named.decide(Destination("127.0.0.1", 80)) == Verdict(
        "deny", "not in sandbox.network.allow"
    )
    assert named.decide(Destination("127.0.0.2", 80)).decision == "allow"
    assert named.decide(Destination("localhost", 80)).decision == "allow"


def test_a_name_resolving_into_a_denied_range_is_denied() -> None:
    rebinding = policy(["*.example.test"], ["10.0.0.0/8", "::1"])
    destination = Destination("evil.example.test", 443)
    resolved = [ipaddress.ip_address("10.1.2.3")]
    assert rebinding.decide(destination, resolved) == Verdict(
        "deny", "sandbox.network.deny '10.0.0.0/8', evil.example.test is 10.1.2.3"
    )
    assert rebinding.decide(destination, [ipaddress.ip_address("::1")]).rule == (
        "sandbox.network.deny '::1', evil.example.test is ::1"
    )
    assert rebinding.decide(destination, [ipaddress.ip_address("192.0.2.1")]).decision == "allow"


def test_unknown_ask() -> None:
    asking = policy(["pypi.org"], unknown="ask")
    assert asking.decide(Destination("example.com", 443)) == Verdict(
        "ask", "not in sandbox.network.allow"
    )


def test_protocols_limit_a_rule() -> None:
    rule = parse_rule("api.example.com", "allow", "codex rule r.rules:1", protocols=["https"])
    limited = NetworkPolicy((rule,))
    assert limited.decide(Destination("api.example.com", 443, "https")).decision == "allow"
    assert limited.decide(Destination("api.example.com", 80, "http")).decision == "deny"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Example.COM.", "example.com"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("127.0.0.1", "127.0.0.1"),
    ],
)
def test_normalize_host(name: str, expected: str) -> None:
    assert normalize_host(name) == expected


def test_an_idna_entry_matches_its_unicode_and_ascii_forms() -> None:
    idn = policy(["*.bücher.example"])
    assert idn.decide(Destination(normalize_host("www.BÜCHER.example."), 443)).decision == "allow"
    assert idn.decide(Destination("www.xn--bcher-kva.example", 443)).decision == "allow"


def test_ipv6_entries_with_and_without_port() -> None:
    six = policy(["[::1]:8080", "fd00::/8"])
    assert six.decide(Destination("::1", 8080)).decision == "allow"
    assert six.decide(Destination("::1", 8081)).decision == "deny"
    assert six.decide(Destination("fd12::5", 1)).decision == "allow"


def test_blocked_message() -> None:
    assert blocked_message(Destination("example.com", 443), "not in sandbox.network.allow") == (
        "blocked by pi network policy: example.com:443 is not allowed "
        "(not in sandbox.network.allow)"
    )
    assert str(Destination("::1", 80)) == "[::1]:80"


# -- the configuration ---------------------------------------------------------------------------


def test_defaults_and_the_issue_table() -> None:
    assert NetworkConfig() == NetworkConfig(mode="off", allow=[], deny=[], unknown="deny")
    loaded = load_sandbox_config(
        {
            "sandbox": {
                "backend": "bwrap",
                "network": {
                    "mode": "allow-list",
                    "allow": [
                        "pypi.org",
                        "*.pythonhosted.org",
                        "api.github.com:443",
                        "10.20.0.0/16",
                    ],
                    "deny": ["*.internal.example"],
                    "unknown": "ask",
                },
            }
        }
    )
    assert loaded is not None and loaded.network is not None
    assert loaded.network_mode == "allow-list"
    assert loaded.network.unknown == "ask"


@pytest.mark.parametrize(
    ("bwrap", "mode"), [({}, "off"), ({"network": False}, "off"), ({"network": True}, "on")]
)
def test_bwrap_network_is_the_mode_without_a_network_table(bwrap: dict, mode: str) -> None:
    loaded = load_sandbox_config({"sandbox": {"backend": "bwrap", "bwrap": bwrap}})
    assert loaded is not None and loaded.network_mode == mode


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"network": {"mode": "allow-list", "allow": ["pypi.org", "http://x.org/"]}},
            "pi.toml: sandbox.network.allow[1]: an entry is a host, *.suffix, IP or CIDR "
            "(no scheme or path): 'http://x.org/'",
        ),
        (
            {"network": {"mode": "allow-list", "deny": ["*.a*.b"]}},
            "pi.toml: sandbox.network.deny[0]: a wildcard is only a leading '*.': '*.a*.b'",
        ),
        (
            {"network": {"allow": ["a.org:99999"]}},
            "pi.toml: sandbox.network.allow[0]: a port is a number from 1 to 65535, not '99999'",
        ),
        (
            {"network": {"allow": ["10.0.0.0/40"]}},
            "pi.toml: sandbox.network.allow[0]: not a CIDR range: '10.0.0.0/40'",
        ),
        (
            {"network": {"allow": ["a..b"]}},
            "pi.toml: sandbox.network.allow[0]: not a valid host name: 'a..b'",
        ),
        (
            {"network": {"mode": "some"}},
            "pi.toml: sandbox.network.mode: Input should be 'off', 'allow-list' or 'on'",
        ),
        (
            {"network": {"unknown": "allow"}},
            "pi.toml: sandbox.network.unknown: Input should be 'deny' or 'ask'",
        ),
        ({"network": {"allowed": []}}, "pi.toml: sandbox.network.allowed: unknown key"),
        (
            {"network": {"mode": "on"}, "bwrap": {"network": False}},
            'pi.toml: sandbox.bwrap.network: contradicts sandbox.network.mode = "on": '
            "remove sandbox.bwrap.network",
        ),
    ],
)
def test_bad_network_tables_name_the_key(table: dict, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_sandbox_config({"sandbox": {"backend": "bwrap", **table}}, "pi.toml")
    assert str(raised.value) == message


@pytest.mark.parametrize("backend", ["local", "ssh", "ray"])
def test_allow_list_needs_a_backend_that_enforces_it(backend: str) -> None:
    table: dict = {"backend": backend, "network": {"mode": "allow-list"}}
    if backend == "ssh":
        table["ssh"] = {"host": "h", "remote_cwd": "/w"}
    with pytest.raises(ConfigError) as raised:
        load_sandbox_config({"sandbox": table}, "pi.toml")
    assert str(raised.value) == (
        f'pi.toml: sandbox.network.mode: "allow-list" is enforced only by backend = "bwrap" or "container", '
        f'not "{backend}" (its commands could reach any host)'
    )


# -- pi policy check --network ----------------------------------------------------------------

PI = str(Path(sys.executable).with_name("pi"))


def policy_check(root: Path, *args: str) -> tuple[int, str, str]:
    out = subprocess.run(
        [PI, "policy", "check", *args], cwd=root, capture_output=True, text=True, check=False
    )
    return out.returncode, out.stdout, out.stderr


NETWORK_TOML = """\
[sandbox]
backend = "bwrap"
[sandbox.network]
mode = "allow-list"
allow = ["pypi.org", "*.pythonhosted.org", "api.github.com:443"]
deny = ["*.internal.example"]
unknown = "ask"
"""


def test_policy_check_network(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text(NETWORK_TOML)
    assert policy_check(tmp_path, "--network", "PyPI.org.") == (
        0,
        "decision: allow\ndestination: pypi.org:443\nprotocol: https\n"
        "rule: sandbox.network.allow 'pypi.org'\n",
        "",
    )
    assert policy_check(tmp_path, "--network", "api.github.com:80", "--protocol", "http") == (
        4,
        "decision: ask\ndestination: api.github.com:80\nprotocol: http\n"
        "rule: not in sandbox.network.allow\n",
        "",
    )
    assert policy_check(tmp_path, "--network", "db.internal.example:5432", "--json") == (
        1,
        '{"decision": "deny", "host": "db.internal.example", "port": 5432, "protocol": '
        '"https", "rule": "sandbox.network.deny \'*.internal.example\'"}\n',
        "",
    )


def test_policy_check_network_modes_and_bad_input(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text('[sandbox]\nbackend = "bwrap"\n')
    assert policy_check(tmp_path, "--network", "[::1]:8080", "--json") == (
        1,
        '{"decision": "deny", "host": "::1", "port": 8080, "protocol": "https", '
        '"rule": "sandbox.network.mode = \\"off\\""}\n',
        "",
    )
    assert policy_check(tmp_path, "--network", "a..b") == (
        2,
        "",
        "pi: error: --network: not a valid host name: 'a..b'\n",
    )
    assert policy_check(tmp_path, "--network", "a.org:http") == (
        2,
        "",
        "pi: error: --network: a port is a number from 1 to 65535, not 'http'\n",
    )
    assert policy_check(tmp_path) == (
        2,
        "",
        "pi: error: policy check: give either COMMAND or --network HOST[:PORT]\n",
    )


def test_policy_check_names_the_config_file_found_above_in_a_warning(tmp_path: Path) -> None:
    # run from a sub-folder: the pi.toml found above it is named by its absolute path
    (tmp_path / "pi.toml").write_text('[tools.bsah]\nexposure = "hidden"\n')
    (tmp_path / "sub").mkdir()
    status, out, err = policy_check(tmp_path / "sub", "ls")
    assert (status, out.splitlines()[0]) == (0, "decision: allow")
    assert err.startswith(
        f"pi: warning: {tmp_path / 'pi.toml'}: [tools.bsah]: no tool named 'bsah' is registered;"
    )
    assert err.count("\n") == 1


def test_allow_list_on_a_container_needs_an_image() -> None:
    table = {
        "backend": "container",
        "container": {"container": "dev-box"},
        "network": {"mode": "allow-list"},
    }
    with pytest.raises(ConfigError) as raised:
        load_sandbox_config({"sandbox": table}, "pi.toml")
    assert str(raised.value) == (
        'pi.toml: sandbox.network.mode: "allow-list" with backend = "container" needs '
        "sandbox.container.image (a container pi starts without a network), not an existing "
        "container"
    )
    table["container"] = {"image": "debian"}
    loaded = load_sandbox_config({"sandbox": table}, "pi.toml")
    assert loaded is not None and loaded.network_mode == "allow-list"
