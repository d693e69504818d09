"""A third-party tool's declarations are honoured exactly as the built-in tools' are (nothing
in pi's shared code knows a tool by name): its ``render_call`` and ``render_result`` in
``pi call`` and ``pi run``, its ``verify`` mode in ``pi replay --verify``, and its
``path_arguments`` in the sandbox path policy, which blocks its write outside the roots with
the same text as ``write``'s."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from cli_helpers import Result, write_jsonl
from pty_helpers import run_on_pty

PLUGINS = ("-p", "pi_builtin_tools.plugin", "-p", "declared_tool_plugin")
CLOSING = re.compile(r"\d+ turns?, \d+ tool calls?, \d+ errors?, \d+\.\ds\n\Z")


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def test_the_tool_declares_its_fields_and_wrapping_keeps_them() -> None:
    import declared_tool_plugin

    from pi_core import PathArgument, wrap_tool_definition

    wrapped = wrap_tool_definition(declared_tool_plugin.stash_tool("/w"))
    assert wrapped.render_call is declared_tool_plugin.render_stash_call
    assert wrapped.render_result is declared_tool_plugin.render_stash_result
    assert (wrapped.verify, wrapped.streaming, wrapped.command_argument) == (
        "outcome",
        False,
        None,
    )
    assert wrapped.path_arguments == (PathArgument("target", write=True),)


def test_pi_run_shows_the_call_by_render_call_and_the_result_by_render_result(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    session = write_jsonl(
        plugin_env / "model.jsonl",
        [
            {
                "role": "assistant",
                "content": [call("c1", "stash", target="notes.txt", text="hello")],
                "stopReason": "toolUse",
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Stashed."}]},
        ],
    )
    r = pi(*PLUGINS, "run", "--model", f"scripted:{session}", "stash it")
    assert (r.status, r.err) == (0, "")
    assert CLOSING.sub("", r.out) == (
        f"model: scripted:{session}\n"
        f"cwd: {plugin_env}\n"
        "\n"
        "• stash → notes.txt\n"
        "  stashed 5 bytes\n"
        "\n"
        "Stashed.\n"
        "\n"
    )
    assert (plugin_env / "notes.txt").read_text() == "hello"


def test_pi_call_on_a_terminal_shows_render_call_and_render_result(plugin_env: Path) -> None:
    status, out = run_on_pty(
        [*PLUGINS, "call", "stash", '{"target":"n.txt","text":"abc"}'],
        plugin_env,
        env={"NO_COLOR": "1"},
    )
    assert (status, out) == (0, "stash → n.txt\nstashed 3 bytes\n".encode())


def test_pi_call_piped_prints_the_content_alone_not_render_result(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    """Renderers are for the terminal (DESIGN 3); ``pi call ... > file`` keeps what the model
    sees, as ``docs/reference/cli.md`` says (the built-in edit's diff used to be printed)."""
    out = pi(*PLUGINS, "call", "stash", '{"target":"n.txt","text":"abc"}')
    assert (out.status, out.err) == (0, "")
    assert re.fullmatch(r"stash #\d+ done\n", out.out)
    (plugin_env / "e.txt").write_text("hello\n")
    out = pi(
        *PLUGINS, "call", "edit", '{"path":"e.txt","edits":[{"oldText":"hello","newText":"bye"}]}'
    )
    assert (out.status, out.out, out.err) == (0, "Successfully replaced 1 block(s) in e.txt.\n", "")


def test_replay_verify_compares_by_the_declared_mode(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    """``stash`` (``verify = "outcome"``) agrees although its text differs on every call;
    ``stamp`` (``verify = "text"``) does not; a ``stash`` whose declared written path is
    outside the workspace is not run."""
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": str(plugin_env)},
    ]
    messages = [
        ("a1", {"role": "assistant", "content": [call("c1", "stash", target="a.txt", text="x")]}),
        ("r1", {"role": "toolResult", "toolCallId": "c1", "toolName": "stash",
                "content": [{"type": "text", "text": "stash #1 done"}], "isError": False}),
        ("a2", {"role": "assistant", "content": [call("c2", "stamp")]}),
        ("r2", {"role": "toolResult", "toolCallId": "c2", "toolName": "stamp",
                "content": [{"type": "text", "text": "stamp #2"}], "isError": False}),
        ("a3", {"role": "assistant",
                "content": [call("c3", "stash", target="../out.txt", text="x")]}),
        ("r3", {"role": "toolResult", "toolCallId": "c3", "toolName": "stash",
                "content": [{"type": "text", "text": "stash #3 done"}], "isError": False}),
    ]  # fmt: skip
    parent = None
    for entry_id, message in messages:
        lines.append(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t",
             "message": {**message, "timestamp": 0}}
        )  # fmt: skip
        parent = entry_id
    write_jsonl(plugin_env / "session.jsonl", lines)
    r = pi(*PLUGINS, "replay", "session.jsonl", "--verify", "--json")
    assert r.status == 0, r.err
    verdicts = r.json_lines()
    assert [(v.get("toolCallId"), v.get("agree"), v.get("why")) for v in verdicts[:-1]] == [
        ("c1", True, "same outcome"),
        ("c2", False, "text differs"),
        ("c3", False, "not run: stash outside the workspace (../out.txt)"),
    ]
    assert verdicts[-1] == {
        "summary": {"stash": {"agree": 1, "total": 2}, "stamp": {"agree": 0, "total": 1}}
    }
    assert not (plugin_env.parent / "out.txt").exists()


def test_the_sandbox_path_policy_blocks_its_write_with_the_text_write_gets(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    (plugin_env / "pi.toml").write_text('[sandbox.policy]\nwrite_roots = ["."]\n')
    sandboxed = (*PLUGINS, "-p", "pi_sandbox_plugin.plugin")
    outside = plugin_env.parent / "out.txt"
    expected = (
        f"Writing '{outside}' is not allowed by the sandbox path policy: it is outside the "
        f"allowed write_roots ({plugin_env})\n"
    )
    by_write = pi(*sandboxed, "call", "write", json.dumps({"path": "../out.txt", "content": "x"}))
    by_stash = pi(*sandboxed, "call", "stash", json.dumps({"target": "../out.txt", "text": "x"}))
    assert (by_write.status, by_write.out) == (1, expected)
    assert (by_stash.status, by_stash.out) == (1, expected)
    assert not outside.exists()
    inside = pi(*sandboxed, "call", "stash", json.dumps({"target": "in.txt", "text": "x"}))
    assert inside.status == 0, inside.out


def test_prompt_guidelines_that_depend_on_the_other_tools_come_first() -> None:
    import datetime

    import declared_tool_plugin

    from pi_core import ToolDefinition, wrap_tool_definition
    from pi_core._cli.system_prompt import build_system_prompt

    stamp = declared_tool_plugin.stamp_tool()
    stamp.prompt_guidelines = ["Stamp only once."]
    stamp.prompt_guidelines_for = lambda names: [f"Stamp next to {', '.join(names)}."]
    stash = declared_tool_plugin.stash_tool("/w")
    assert isinstance(stash, ToolDefinition)
    tools = [wrap_tool_definition(stash), wrap_tool_definition(stamp)]
    prompt = build_system_prompt(tools, "/w", date=datetime.date(2026, 1, 2))
    assert prompt.split("Guidelines:\n")[1] == (
        "- Stamp next to stash, stamp.\n"
        "- Stamp only once.\n"
        "- Be concise in your responses\n"
        "- Show file paths clearly when working with files\n"
        "\nCurrent date: 2026-01-02\n"
        "Current working directory: /w"
    )
