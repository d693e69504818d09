"""``pi run`` shows the nested calls of a call (issue 12 item 4): a codemode script's ``read``
and ``bash`` calls, indented under the codemode call with their status, in plain text and on a
terminal, from a real run with a scripted model."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from cli_helpers import call, write_jsonl
from pty_helpers import run_on_pty
from test_run_view import BUILTINS, end, start, update
from test_terminal_safety import SGR, pi_bytes

from pi_core._cli.render import RunView

PLUGIN = ("-p", "pi_builtin_tools.plugin")
SCRIPT = (
    'const r = await tools.read({path: "a.txt"});\n'
    'await tools.bash({command: "echo hi"});\n'
    'try { await tools.read({path: "missing.txt"}); } catch (e) { console.log("caught"); }\n'
    "return r;"
)
WALL = re.compile(r"Wall time \d+\.\d seconds")
CLOSING = re.compile(r"\d+\.\ds\n\Z")


def scripted_codemode(folder: Path) -> Path:
    (folder / "a.txt").write_text("hello\n")
    return write_jsonl(
        folder / "model.jsonl",
        [
            {"role": "assistant", "content": [call("c1", "codemode", code=SCRIPT)],
             "stopReason": "toolUse"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}],
             "stopReason": "stop"},
        ],
    )  # fmt: skip


def expected_body(folder: Path) -> str:
    header = call("c1", "codemode", code=SCRIPT)["arguments"]
    shown = json.dumps(header, ensure_ascii=False, separators=(",", ":"))
    return (
        f"model: scripted:{folder / 'model.jsonl'}\n"
        f"cwd: {folder}\n"
        "\n"
        f"• codemode {shown}\n"
        "  running read a.txt\n"
        "  ok      read a.txt\n"
        "  running bash $ echo hi\n"
        "  ok      bash $ echo hi\n"
        "  running read missing.txt\n"
        f"  error   read missing.txt: ENOENT: no such file or directory, access "
        f"'{folder / 'missing.txt'}'\n"
        "  Script completed\n"
        "  Wall time X seconds\n"
        "  Output:\n"
        "  hello\n"
        "  <console_output>\n"
        "  caught\n"
        "  </console_output>\n"
        "\n"
        "done\n"
        "\n"
        "2 turns, 1 tool call, 0 errors, "
    )


def normalised(text: str) -> str:
    return CLOSING.sub("", WALL.sub("Wall time X seconds", text))


def test_pi_run_shows_a_scripts_calls_under_it_with_their_status(plugin_env: Path) -> None:
    model = scripted_codemode(plugin_env)
    status, out, err = pi_bytes(
        *PLUGIN, "run", "--tools", "read,bash,codemode", "--model", f"scripted:{model}", "hi",
        cwd=plugin_env,
    )  # fmt: skip
    assert (status, err) == (0, b"")
    assert normalised(out.decode()) == expected_body(plugin_env)


def test_on_a_terminal_the_status_lines_are_styled(plugin_env: Path) -> None:
    model = scripted_codemode(plugin_env)
    status, out = run_on_pty(
        [*PLUGIN, "run", "--tools", "read,bash,codemode", "--model", f"scripted:{model}", "hi"],
        plugin_env,
    )
    assert status == 0
    assert b"\x1b[2m  running read a.txt\x1b[0m\n\x1b[32m  ok      read a.txt\x1b[0m\n" in out
    assert b"\x1b[32m  ok      bash $ echo hi\x1b[0m\n" in out
    assert b"\x1b[31m  error   read missing.txt: ENOENT: no such file" in out
    assert SGR.sub(b"", out).count(b"\x1b") == 0
    assert normalised(SGR.sub(b"", out).decode()) == expected_body(plugin_env)


def nested(event: object, parent: str) -> object:
    event.parent_tool_call_id = parent  # type: ignore[attr-defined]
    return event


def test_nested_calls_of_parallel_calls_stay_under_their_parent() -> None:
    """Nested lines come live, under a ``↳`` pointer when another call printed in between; a
    call of a nested call is indented one level more; nested updates are not shown; the
    closing counts count the model's calls only."""
    out = io.StringIO()
    view = RunView(out, tools=BUILTINS.values())
    view.event(start("s", "script", {"code": "x"}))
    view.event(nested(start("n1", "read", {"path": "a"}), "s"))
    view.event(start("b", "bash", {"command": "sleep 1"}))
    view.event(nested(start("n2", "bash", {"command": "ls"}), "s"))
    view.event(nested(update("n2", "a\n"), "s"))
    view.event(nested(start("n3", "read", {"path": "deep"}), "n2"))
    view.event(nested(end("n3", "read", "ok"), "n2"))
    view.event(nested(end("n2", "bash", "boom\nmore", error=True), "s"))
    view.event(nested(end("n1", "read", "text"), "s"))
    view.event(end("s", "script", "Script completed"))
    view.event(end("b", "bash", ""))
    assert out.getvalue() == (
        '• script {"code":"x"}\n'
        "  running read a\n"
        "• bash $ sleep 1\n"
        '↳ script {"code":"x"}\n'
        "  running bash $ ls\n"
        "    running read deep\n"
        "    ok      read deep\n"
        "  error   bash $ ls: boom\n"
        "  ok      read a\n"
        "  Script completed\n"
        "↳ bash $ sleep 1\n"
    )
    assert (view.tool_calls, view.errors) == (2, 0)
