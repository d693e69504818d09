"""``pi plugins`` and ``pi tools`` (DESIGN §2, §5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": "string"}, "delay": {"type": "number"}},
    "required": ["value"],
}

CLI_PLUGIN_HOOKS = ["pi_before_tool_call", "pi_on_event", "pi_register_tools"]


def test_plugins_json_lists_explicit_plugin(pi) -> None:
    out = pi("-p", "cli_plugin", "plugins", "--json")
    assert (out.status, out.err) == (0, "")
    assert json.loads(out.out) == [
        {
            "name": "cli_plugin",
            "distribution": None,
            "version": None,
            "module": "cli_plugin",
            "hooks": CLI_PLUGIN_HOOKS,
        }
    ]


def test_plugins_plain_table(pi) -> None:
    out = pi("-p", "cli_plugin", "plugins")
    assert out.out == (
        "name        distribution  version  hooks\n"
        "cli_plugin  -             -        pi_before_tool_call, pi_on_event, pi_register_tools\n"
    )


def test_plugins_with_none_loaded(pi) -> None:
    assert pi("plugins").out == "no plugins loaded\n"
    assert pi("plugins", "--json").out == "[]\n"


def test_plugins_lists_installed_builtins_by_entry_point_name(pi, monkeypatch) -> None:
    monkeypatch.delenv("PI_DISABLE_PLUGIN_AUTOLOAD")
    infos = json.loads(pi("plugins", "--json").out)
    by_name = {i["name"]: (i["distribution"], i["module"]) for i in infos}
    assert by_name["builtin_tools"] == ("pi-builtin-tools", "pi_builtin_tools.plugin")
    assert by_name["sandbox"] == ("pi-sandbox-plugin", "pi_sandbox_plugin.plugin")


def test_no_plugin_option_blocks_a_plugin(pi, monkeypatch) -> None:
    monkeypatch.delenv("PI_DISABLE_PLUGIN_AUTOLOAD")
    infos = json.loads(pi("--no-plugin", "sandbox", "plugins", "--json").out)
    assert "sandbox" not in [i["name"] for i in infos]
    assert "builtin_tools" in [i["name"] for i in infos]


def test_no_plugin_wins_over_p(pi) -> None:
    assert pi("--no-plugin", "cli_plugin", "-p", "cli_plugin", "plugins").out == (
        "no plugins loaded\n"
    )


def test_tools_json_shape(pi) -> None:
    out = pi("-p", "cli_plugin", "tools", "--json")
    assert out.status == 0
    tools = json.loads(out.out)
    assert [t["name"] for t in tools] == ["echo", "fail", "where", "wait", "stdin", "sequential"]
    assert tools[0] == {
        "name": "echo",
        "label": "Echo",
        "description": "Echo a value back.",
        "parameters": ECHO_SCHEMA,
        "executionMode": "parallel",
        "exposure": "direct",
        "active": True,
        "callable": True,
        "callableBy": ["model", "nested calls", "pi call"],
    }
    assert tools[1] == {
        "name": "fail",
        "label": "fail",
        "description": "Raise an error with the message.",
        "parameters": {
            "additionalProperties": False,
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "type": "object",
        },
        "executionMode": "parallel",
        "exposure": "direct",
        "active": True,
        "callable": True,
        "callableBy": ["model", "nested calls", "pi call"],
    }
    assert tools[5]["executionMode"] == "sequential"


def test_tools_json_is_indented_by_two_spaces(pi) -> None:
    out = pi("-p", "cli_plugin", "tools", "--json").out
    assert out.startswith('[\n  {\n    "name": "echo",\n    "label": "Echo",\n')
    assert out.endswith("\n]\n")


def test_tools_plain(pi) -> None:
    out = pi("-p", "cli_plugin", "tools").out
    assert out.split("\n\n")[0] == (
        "echo [parallel] direct, active, callable by the model, nested calls and pi call\n"
        "  Echo a value back.\n"
        '  parameters: {"type":"object","properties":{"value":{"type":"string"},'
        '"delay":{"type":"number"}},"required":["value"]}'
    )
    assert out.count("\n\n") == 5


def test_tools_with_none_registered(pi) -> None:
    assert pi("tools").out == "no tools registered\n"
    assert pi("tools", "--json").out == "[]\n"


@pytest.mark.parametrize("command", ["plugins", "tools"])
def test_help_exits_0_on_stdout(pi, command: str) -> None:
    out = pi(command, "--help")
    assert out.status == 0
    assert out.out.startswith(f"usage: pi {command} ")
    assert out.err == ""


def test_top_level_help(pi) -> None:
    out = pi("--help")
    assert out.status == 0
    assert out.out.startswith("usage: pi [-h] [--config FILE] [--no-plugin NAME] [-p MODULE]")
    for command in ("plugins", "tools", "call", "replay"):
        assert f"    {command}" in out.out


def test_top_level_help_lists_the_exit_codes_of_the_reference(pi) -> None:
    """``pi --help`` and the table in docs/reference/cli.md name the same exit codes."""
    table = (ROOT / "docs/reference/cli.md").read_text().split("## Exit codes", 1)[1]
    documented = re.findall(r"^\| (\d+) \|", table, re.MULTILINE)
    help_text = " ".join(pi("--help").out.split())
    epilog = help_text[help_text.index("exit status: ") :]
    assert documented == ["0", "1", "4", "2", "3", "130", "141"]
    assert sorted(re.findall(r"(?:: |; )(\d+) ", epilog), key=int) == sorted(documented, key=int)
