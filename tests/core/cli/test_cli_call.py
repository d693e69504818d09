"""``pi call TOOL ARGS_JSON``: one call through the whole pipeline (DESIGN §5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import without_timestamps

TIMESTAMP = re.compile(r',"timestamp":\d{13}\}$')


def test_call_json_prints_one_compact_line(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"x"}', "--json")
    assert result.status == 0
    assert result.err == ""
    line = result.out.removesuffix("\n")
    assert "\n" not in line
    assert TIMESTAMP.search(line)
    assert TIMESTAMP.sub("}", line) == (
        '{"role":"toolResult","toolCallId":"call-1","toolName":"echo",'
        '"content":[{"type":"text","text":"x"}],"isError":false}'
    )


def test_call_prints_just_the_content_when_not_a_terminal(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"héllo"}')
    assert (result.status, result.out, result.err) == (0, "héllo\n", "")


def test_call_id_option_sets_the_tool_call_id(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"x"}', "--id", "t7", "--json")
    assert json.loads(result.out)["toolCallId"] == "t7"


def test_unknown_tool_is_an_error_result_with_exit_1(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "nope", "{}", "--json")
    assert result.status == 1
    assert result.err == ""
    assert without_timestamps(json.loads(result.out)) == {
        "role": "toolResult",
        "toolCallId": "call-1",
        "toolName": "nope",
        "content": [{"type": "text", "text": "Tool nope not found"}],
        "details": {},
        "isError": True,
    }


def test_unknown_tool_rendered(pi) -> None:
    result = pi("call", "nope", '{"a":1}')
    assert (result.status, result.out) == (1, "Tool nope not found\n")


def test_tool_that_raises_gives_its_message_and_exit_1(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "fail", '{"message":"boom"}', "--json")
    assert result.status == 1
    assert without_timestamps(json.loads(result.out)) == {
        "role": "toolResult",
        "toolCallId": "call-1",
        "toolName": "fail",
        "content": [{"type": "text", "text": "boom"}],
        "details": {},
        "isError": True,
    }


def test_invalid_arguments_fail_validation_not_the_cli(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "echo", "[1]", "--json")
    assert result.status == 1
    message = json.loads(result.out)
    assert message["isError"] is True
    assert message["content"][0]["text"].startswith('Validation failed for tool "echo"')


def test_before_hook_blocks_the_call(pi) -> None:
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"forbidden"}')
    assert (result.status, result.out) == (1, "echo of 'forbidden' is not allowed\n")


def test_cwd_option_is_the_session_cwd(pi, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    result = pi("-p", "cli_plugin", "call", "where", "{}", "--cwd", str(target), "--json")
    assert result.status == 0
    message = json.loads(result.out)
    assert message["content"] == [{"type": "text", "text": str(target)}]
    assert message["details"] == {"cwd": str(target)}


def test_cwd_defaults_to_the_working_directory(pi, plugin_env: Path) -> None:
    result = pi("-p", "cli_plugin", "call", "where", "{}")
    assert result.out == f"{plugin_env}\n"


def test_relative_cwd_is_made_absolute(pi, plugin_env: Path) -> None:
    (plugin_env / "sub").mkdir()
    result = pi("-p", "cli_plugin", "call", "where", "{}", "--cwd", "sub", "--json")
    assert json.loads(result.out)["details"] == {"cwd": str(plugin_env / "sub")}


def test_plugin_reads_its_own_config_table(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text(
        '[pi]\ntool_execution = "sequential"\n\n[cli_plugin]\nprefix = ">> "\n'
    )
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"x"}')
    assert (result.status, result.out) == (0, ">> x\n")


def test_config_is_found_in_a_parent_directory(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text('[cli_plugin]\nprefix = "up: "\n')
    nested = plugin_env / "a" / "b"
    nested.mkdir(parents=True)
    import os

    os.chdir(nested)
    result = pi("-p", "cli_plugin", "call", "echo", '{"value":"x"}')
    assert result.out == "up: x\n"


def test_explicit_config_option(pi, tmp_path: Path) -> None:
    config = tmp_path / "other.toml"
    config.write_text('[cli_plugin]\nprefix = "cfg: "\n')
    result = pi("--config", str(config), "-p", "cli_plugin", "call", "echo", '{"value":"x"}')
    assert result.out == "cfg: x\n"


def test_call_emits_no_agent_events(pi) -> None:
    import cli_plugin

    pi("-p", "cli_plugin", "call", "echo", '{"value":"x"}')
    assert cli_plugin.SEEN == []
