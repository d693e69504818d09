"""Tool exposure on the command line: ``[tools.NAME] exposure`` in ``pi.toml``, the columns of
``pi tools``, ``pi replay --exposure/--tool-search/--codemode``, and session files whose
system messages declare the tools (``pi run --session`` writes them, ``pi replay`` honours
them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from cli_helpers import Result, write_jsonl

BUILTINS = ("-p", "pi_builtin_tools.plugin")
PLUGIN = ("-p", "cli_plugin")


def call(*calls: tuple[str, str, dict[str, object]]) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls],
        "stopReason": "toolUse",
    }


def rows(result: Result) -> dict[str, tuple[str, bool, bool]]:
    return {t["name"]: (t["exposure"], t["active"], t["callable"]) for t in json.loads(result.out)}


def test_pi_toml_sets_exposure_and_pi_tools_shows_the_sets(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    (plugin_env / "pi.toml").write_text(
        '[tools.echo]\nexposure = "deferred"\n\n[tools.fail]\nexposure = "hidden"\n'
        '[tools.where]\nexposure = "model-only"\n[tools.wait]\nexposure = "codemode"\n'
    )
    result = pi(*PLUGIN, "tools", "--json")
    assert result.status == 0
    assert rows(result) == {
        "echo": ("deferred", False, True),
        "fail": ("hidden", False, False),
        "where": ("model-only", True, False),
        "wait": ("codemode", False, True),
        "stdin": ("direct", True, True),
        "sequential": ("direct", True, True),
    }
    plain = pi(*PLUGIN, "tools").out
    headers = [line for line in plain.splitlines() if not line.startswith(" ") and line]
    assert headers == [
        "echo [parallel] deferred, inactive, callable by nested calls and pi call",
        "fail [parallel] hidden, inactive, callable by pi call",
        "where [parallel] model-only, active, callable by the model and pi call",
        "wait [parallel] codemode, inactive, callable by nested calls and pi call",
        "stdin [parallel] direct, active, callable by the model, nested calls and pi call",
        "sequential [sequential] direct, active, callable by the model, nested calls and pi call",
    ]
    by = {t["name"]: t["callableBy"] for t in json.loads(result.out)}
    assert by == {
        "echo": ["nested calls", "pi call"],
        "fail": ["pi call"],
        "where": ["model", "pi call"],
        "wait": ["nested calls", "pi call"],
        "stdin": ["model", "nested calls", "pi call"],
        "sequential": ["model", "nested calls", "pi call"],
    }
    # what pi tools says: pi call reaches a hidden tool
    called = pi(*PLUGIN, "call", "fail", '{"message": "it ran"}')
    assert (called.status, called.out) == (1, "it ran\n")


def test_a_bad_exposure_in_pi_toml_names_file_and_key(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    (plugin_env / "pi.toml").write_text('[tools.echo]\nexposure = "sideways"\n')
    result = pi(*PLUGIN, "tools")
    assert (result.status, result.out) == (2, "")
    assert result.err == (
        f"pi: error: {plugin_env / 'pi.toml'}: tools.echo.exposure: Input should be 'direct', "
        "'model-only', 'codemode', 'deferred' or 'hidden' (got \"sideways\")\n"
    )


def test_tool_search_is_registered_inactive_and_model_only(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    table = rows(pi(*BUILTINS, "tools", "--json"))
    assert table["tool_search"] == ("model-only", False, False)
    assert table["read"] == ("direct", True, True)


def test_replay_tool_search_loads_a_deferred_tool_for_the_next_request(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    (plugin_env / "a.txt").write_text("x\n")
    script = write_jsonl(
        plugin_env / "m.jsonl",
        [
            call(("c1", "find", {"pattern": "*.txt"}), ("c2", "tool_search", {"query": "glob"})),
            call(("c3", "find", {"pattern": "*.txt"})),
        ],
    )
    result = pi(*BUILTINS, "replay", str(script), "--tool-search", "--exposure", "find=deferred",
                "--json")  # fmt: skip
    assert result.status == 0
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert [(m["toolCallId"], m["content"][0]["text"].split("\n")[:2], m["isError"]) for m in lines] == [
        ("c1", ["Tool find not found"], True),
        ("c2", ["Loaded 1 tool. They are available from your next call:",
                "- find: Search for files by glob pattern. Returns matching file paths relative "
                "to the search directory. Respects .gitignore. Output is truncated to 1000 "
                "results or 50KB (whichever is hit first)."], False),
        ("c3", ["a.txt"], False),
    ]  # fmt: skip
    assert lines[1]["details"] == {"loaded": ["find"]}


def test_replay_events_announce_the_loaded_tool_before_the_next_assistant_message(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    script = write_jsonl(
        plugin_env / "m.jsonl",
        [call(("c1", "tool_search", {"query": "echo"})), call(("c2", "echo", {"value": "v"}))],
    )
    (plugin_env / "pi.toml").write_text('[tools.echo]\nexposure = "deferred"\n')
    result = pi(*PLUGIN, *BUILTINS, "replay", str(script), "--tool-search", "--events")
    events = [json.loads(line) for line in result.out.splitlines()]
    turn = [e for e in events if e["type"] in ("turn_start", "message_start")]
    second = turn[turn.index({"type": "turn_start"}) + 1]
    assert second["message"]["role"] == "system"
    assert [t["name"] for t in second["message"]["toolsAdded"]] == ["echo"]
    assert "toolsRemoved" not in second["message"]
    end = next(e for e in events if e["type"] == "tool_execution_end" and e["toolCallId"] == "c2")
    assert (end["result"]["content"][0]["text"], end["isError"]) == ("v", False)


def test_replay_flag_errors_are_one_line_exit_2(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    script = write_jsonl(plugin_env / "m.jsonl", [call(("c1", "echo", {"value": "v"}))])
    cases = [
        (("--codemode",), "--codemode: no plugin registers the codemode tool"),
        (("--codemode-python",),
         "--codemode-python: no plugin registers the codemode_python tool"),
        (("--exposure", "echo=sideways"),
         "--exposure: unknown exposure 'sideways' for echo (one of: direct, model-only, "
         "codemode, deferred, hidden)"),
        (("--exposure", "echo"), "--exposure: expected NAME=LEVEL, got 'echo'"),
        (("--exposure", "nope=hidden"),
         "--exposure: unknown tool 'nope' (registered tools: echo, fail, where, wait, stdin, "
         "sequential)"),
        (("--tool-search",), "--tool-search: no plugin registers the tool_search tool"),
    ]  # fmt: skip
    for flags, message in cases:
        result = pi(*PLUGIN, "replay", str(script), *flags)
        assert (result.status, result.out, result.err) == (2, "", f"pi: error: {message}\n")


def test_replay_exposure_hidden_makes_a_tool_unknown(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    script = write_jsonl(plugin_env / "m.jsonl", [call(("c1", "echo", {"value": "v"}))])
    result = pi(*PLUGIN, "replay", str(script), "--exposure", "echo=hidden,fail=direct", "--json")
    (line,) = [json.loads(line) for line in result.out.splitlines()]
    assert (line["content"], line["isError"]) == (
        [{"type": "text", "text": "Tool echo not found"}],
        True,
    )


def test_a_session_file_keeps_its_system_messages_and_replay_honours_them(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    """The model of the recorded session had only ``fail``: replaying its transcript gives
    ``Tool echo not found`` again, although ``echo`` is active in this session."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/x"}
    declared = {"name": "fail", "description": "d", "parameters": {"type": "object"}}
    entries = [
        {"role": "system", "content": "", "toolsAdded": [declared], "timestamp": 1},
        {"role": "user", "content": "go", "timestamp": 2},
        call(("c1", "echo", {"value": "v"})),
        {"role": "system", "content": "", "toolsAdded": [{**declared, "name": "echo"}],
         "timestamp": 3},
        call(("c2", "echo", {"value": "w"})),
    ]  # fmt: skip
    lines = [header]
    parent = None
    for index, message in enumerate(entries):
        entry_id = f"e{index}"
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t",
                      "message": message})  # fmt: skip
        parent = entry_id
    script = write_jsonl(plugin_env / "s.jsonl", lines)
    result = pi(*PLUGIN, "replay", str(script), "--json")
    texts = [json.loads(line)["content"][0]["text"] for line in result.out.splitlines()]
    assert texts == ["Tool echo not found", "w"]
    plain = write_jsonl(plugin_env / "m.jsonl", [call(("c1", "echo", {"value": "v"}))])
    result = pi(*PLUGIN, "replay", str(plain), "--json")
    assert [json.loads(line)["content"][0]["text"] for line in result.out.splitlines()] == ["v"]


def test_replay_codemode_python_activates_the_python_variant(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    """``--codemode-python`` (pi's own flag) activates ``codemode_python``; ``--codemode``
    activates ``codemode`` only, as in Pi 1.6, so a recorded Python script needs the flag."""
    (plugin_env / "a.txt").write_text("hello\n")
    code = 'r = await tools.read(path="a.txt")\nprint(r.strip())'
    script = write_jsonl(plugin_env / "m.jsonl", [call(("p1", "codemode_python", {"code": code}))])
    result = pi(*BUILTINS, "replay", str(script), "--json", "--codemode-python")
    message = json.loads(result.out)
    assert (result.status, message["isError"]) == (0, False)
    assert [b["text"] for b in message["content"]][1:] == [
        "<console_output>\nhello\n</console_output>"
    ]
    assert [(c["name"], c["status"]) for c in message["details"]["calls"]] == [("read", "ok")]
    result = pi(*BUILTINS, "replay", str(script), "--json", "--codemode")
    message = json.loads(result.out)
    assert (message["content"], message["isError"]) == (
        [{"type": "text", "text": "Tool codemode_python not found"}],
        True,
    )


def test_a_tools_table_naming_no_tool_is_a_warning_and_the_call_still_runs(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    # a misspelt [tools.NAME] would otherwise be silently unused: pi says so once, on stderr
    (plugin_env / "pi.toml").write_text(
        '[tools.ecoh]\nexposure = "hidden"\n\n[tools.echo]\nexposure = "direct"\n'
    )
    result = pi(*PLUGIN, "tools", "--json")
    assert result.status == 0
    assert result.err == (
        f"pi: warning: {plugin_env / 'pi.toml'}: [tools.ecoh]: no tool named 'ecoh' is"
        " registered; its settings are not used (tools: echo, fail, sequential, stdin, wait,"
        " where)\n"
    )
    assert rows(result)["echo"] == ("direct", True, True)


def test_a_table_close_to_a_core_or_plugin_table_is_a_warning(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    # a plugin reads its own table: [sandobx.policy] would silently leave a policy unused
    (plugin_env / "pi.toml").write_text(
        "[checkpont]\nenabled = false\n\n[cli_plugn]\nx = 1\n\n[my_table]\nx = 1\n\n"
        "[env]\ninherit = 'core'\n"
    )
    result = pi(*PLUGIN, "tools", "--json")
    assert result.status == 0
    file = plugin_env / "pi.toml"
    assert result.err == (
        f"pi: warning: {file}: [checkpont]: no loaded plugin reads this table; did you mean"
        " [checkpoints]? Its settings are not used\n"
        f"pi: warning: {file}: [cli_plugn]: no loaded plugin reads this table; did you mean"
        " [cli_plugin]? Its settings are not used\n"
    )


def test_a_tools_table_of_a_registered_tool_gives_no_warning(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    (plugin_env / "pi.toml").write_text('[tools.echo]\nexposure = "deferred"\n')
    result = pi(*PLUGIN, "tools", "--json")
    assert (result.status, result.err) == (0, "")
