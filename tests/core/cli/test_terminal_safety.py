"""Terminal safety (``pi_core._cli.terminal``): no escape sequence from a file, a tool result,
an argument or the model reaches the terminal; pi's own styling does, unless ``NO_COLOR`` is set
or the output is not a terminal. The exact bytes written are asserted."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from cli_helpers import PI, write_jsonl
from pty_helpers import run_on_pty

from pi_core._cli.render import Renderer
from pi_core._cli.terminal import sanitise, wants_styling

BUILTINS = ("-p", "pi_builtin_tools.plugin")

#: OSC 52 (clipboard), CSI (clear screen, red), OSC 8 (hyperlink), OSC 0 (title), the bidi
#: overrides and isolates, C1 controls (U+0080, U+009B CSI, U+009F), DEL, a lone ESC, CRLF, tab
PAYLOAD = (
    "a\x1b]52;c;aGVsbG8=\x07b\x1b[2Jc\x1b[31md\x1b]8;;http://evil/\x07link\x1b]8;;\x07"
    "e\x1b]0;pwned\x07f\u202eg\u2066h\u2067i\u2068j\u2069k\x80\x9b31m\x9fl\x7fm\x1bn\r\n\tz\n"
)
SHOWN = (
    "a␛]52;c;aGVsbG8=␇b␛[2Jc␛[31md␛]8;;http://evil/␇link␛]8;;␇"
    "e␛]0;pwned␇f<U+202E>g<U+2066>h<U+2067>i<U+2068>j<U+2069>k␛@␛[31m␛_l␡m␛n\n\tz\n"
)
SGR = re.compile(rb"\x1b\[[0-9;]*m")
CLOSING = re.compile(r"\d+ turns?, \d+ tool calls?, \d+ errors?, \d+\.\ds\n\Z")


def pi_bytes(*args: str, cwd: Path) -> tuple[int, bytes, bytes]:
    """``pi ARGS`` with pipes: exit status and the exact stdout and stderr bytes."""
    proc = subprocess.run(
        [str(PI), *args], cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, timeout=60
    )
    return proc.returncode, proc.stdout, proc.stderr


def evil_file(folder: Path, name: str = "evil.txt") -> Path:
    path = folder / name
    path.write_bytes(PAYLOAD.encode())
    return path


def test_the_sanitiser_shows_every_control_and_keeps_newlines_and_tabs() -> None:
    assert sanitise(PAYLOAD) == SHOWN
    assert sanitise("\x00\x08\r\x1b") == "␀␈␍␛"
    assert sanitise("é ✓ 日本 \u00a0") == "é ✓ 日本 \u00a0"


def test_pi_call_read_writes_the_file_sanitised(plugin_env: Path) -> None:
    evil_file(plugin_env)
    status, out, err = pi_bytes(*BUILTINS, "call", "read", '{"path":"evil.txt"}', cwd=plugin_env)
    assert (status, out, err) == (0, SHOWN.encode(), b"")


def test_pi_call_json_escapes_every_control_character(plugin_env: Path) -> None:
    evil_file(plugin_env)
    status, out, _ = pi_bytes(
        *BUILTINS, "call", "read", '{"path":"evil.txt"}', "--json", cwd=plugin_env
    )
    assert status == 0
    text = out.decode()
    assert "\\u001b]52;c;aGVsbG8=\\u0007b\\u001b[2J" in text
    assert "k\\u0080\\u009b31m\\u009fl\\u007fm\\u001bn\\r\\n\\tz\\n" in text
    assert "\\u202eg\\u2066h" in text
    assert re.search(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text.rstrip("\n")) is None
    assert json.loads(text)["content"][0]["text"] == PAYLOAD


def test_pi_replay_writes_file_names_and_contents_sanitised(plugin_env: Path) -> None:
    evil_file(plugin_env, "evil\u202e.txt")
    calls = [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "evil\u202e.txt"}}
    ]
    write_jsonl(plugin_env / "s.jsonl", [{"role": "assistant", "content": calls}])
    status, out, err = pi_bytes(*BUILTINS, "replay", "s.jsonl", cwd=plugin_env)
    assert (status, err) == (0, b"")
    assert out == ('read {"path":"evil<U+202E>.txt"}\n' + SHOWN).encode()


def scripted_model(folder: Path) -> Path:
    """A model that answers with the payload as its text."""
    return write_jsonl(
        folder / "model.jsonl",
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": PAYLOAD}],
                "stopReason": "stop",
            }
        ],
    )


def test_pi_run_writes_the_model_text_sanitised(plugin_env: Path) -> None:
    model = scripted_model(plugin_env)
    status, out, err = pi_bytes(
        *BUILTINS, "run", "--model", f"scripted:{model}", "hi", cwd=plugin_env
    )
    assert (status, err) == (0, b"")
    assert CLOSING.sub("", out.decode()) == (
        f"model: scripted:{model}\ncwd: {plugin_env}\n\n{SHOWN}\n"
    )


def test_pi_run_on_a_terminal_styles_only_with_its_own_sequences(plugin_env: Path) -> None:
    model = scripted_model(plugin_env)
    status, out = run_on_pty([*BUILTINS, "run", "--model", f"scripted:{model}", "hi"], plugin_env)
    assert status == 0
    # rich shows a tab as spaces up to the next multiple of 8 (here: column 0)
    assert SHOWN.replace("\tz", " " * 8 + "z").encode() in out
    assert out.startswith(f"\x1b[2mmodel: scripted:{model}\x1b[0m\n".encode())
    assert SGR.sub(b"", out).count(b"\x1b") == 0  # every escape is one of pi's SGR styles


def test_no_color_on_a_terminal_writes_no_escape_at_all(plugin_env: Path) -> None:
    model = scripted_model(plugin_env)
    evil_file(plugin_env)
    env = {"NO_COLOR": "1"}
    status, out = run_on_pty(
        [*BUILTINS, "run", "--model", f"scripted:{model}", "hi"], plugin_env, env
    )
    assert status == 0
    assert b"\x1b" not in out
    assert CLOSING.sub("", out.decode()) == (
        f"model: scripted:{model}\ncwd: {plugin_env}\n\n{SHOWN}\n"
    )
    status, out = run_on_pty([*BUILTINS, "call", "read", '{"path":"evil.txt"}'], plugin_env, env)
    assert (status, out) == (0, ("read evil.txt\n" + SHOWN).encode())


def test_errors_on_stderr_are_sanitised(plugin_env: Path) -> None:
    status, out, err = pi_bytes("--config", "x\x1b]0;pwned\x07.toml", "tools", cwd=plugin_env)
    assert (status, out) == (2, b"")
    assert b"\x1b" not in err and b"\x07" not in err
    assert "x␛]0;pwned␇.toml".encode() in err


def test_styled_listings_sanitise_plugin_text_before_styling() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    renderer = Renderer(out, styled=True)
    renderer.tools(
        [
            {
                "name": "t\x1b[2J",
                "description": "d\x9b6n",
                "parameters": {},
                "executionMode": "parallel",
            }
        ]
    )
    renderer.plugins([{"name": "p\x1b]0;x\x07", "hooks": ["pi_register_tools"]}])
    bold = "\x1b[1m{}\x1b[0m".format
    assert out.getvalue() == (
        "\x1b[1;36mt␛[2J\x1b[0m\x1b[2m [parallel]\x1b[0m\n"
        "  d␛[6n\n"
        "\x1b[2m  parameters: \x1b[0m{}\n"
        + "".join(
            bold(" ") + bold(cell) + bold(" ")
            for cell in ("name   ", "distribution", "version", "hooks            ")
        )
        + "\n p␛]0;x␇  -             -        pi_register_tools \n"
    )


def test_no_color_with_any_non_empty_value_and_a_pipe_mean_plain_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_styling(Tty())
    monkeypatch.setenv("NO_COLOR", "0")
    assert not wants_styling(Tty())
    monkeypatch.setenv("NO_COLOR", "")
    assert wants_styling(Tty())
    assert not wants_styling(io.StringIO())


def test_force_color_styles_a_pipe_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert wants_styling(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "0")  # any non-empty value (force-color.org)
    assert wants_styling(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "")
    assert not wants_styling(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_styling(io.StringIO())


def test_force_color_styles_piped_output_of_the_command(pi_process, monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    styled = pi_process("-p", "cli_plugin", "tools")
    assert styled.out.startswith("\x1b[1;36mecho\x1b[0m\x1b[2m [parallel]\x1b[0m")
    monkeypatch.setenv("NO_COLOR", "1")
    plain = pi_process("-p", "cli_plugin", "tools")
    assert plain.out.startswith("echo [parallel] ")
    assert "\x1b" not in plain.out
