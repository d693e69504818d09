"""``pi_core._cli.render``: plain text when not a terminal, rich styling on one."""

from __future__ import annotations

import io
import re

import pytest

from pi_core._cli.render import Renderer, format_size
from pi_core._wire.messages import ImageContent, TextContent, ToolResultMessage

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def message(*blocks, is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id="c1", tool_name="read", content=list(blocks), is_error=is_error, timestamp=0
    )


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1280, "1.3KB"),
        (1048575, "1024.0KB"),
        (1048576, "1.0MB"),
        (1572864, "1.5MB"),
    ],
)
def test_format_size_matches_pi(size: int, text: str) -> None:
    assert format_size(size) == text


def test_plain_result_keeps_text_exactly_and_adds_one_final_newline() -> None:
    out = io.StringIO()
    renderer = Renderer(out)
    assert renderer.styled is False
    renderer.tool_result(message(TextContent(text="a\nb\n"), TextContent(text="c")), {"path": "x"})
    assert out.getvalue() == 'read {"path":"x"}\na\nb\nc\n'


def test_plain_result_without_arguments_and_with_an_image() -> None:
    out = io.StringIO()
    Renderer(out).tool_result(message(ImageContent(data="AAAA" * 400, mime_type="image/png")))
    assert out.getvalue() == "read\n[image image/png, 1.2KB]\n"


def test_plain_error_result_is_marked_in_the_header() -> None:
    out = io.StringIO()
    Renderer(out).tool_result(message(TextContent(text="ENOENT"), is_error=True), {})
    assert out.getvalue() == "read {} [error]\nENOENT\n"


def test_terminal_output_is_styled_and_errors_are_red(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = FakeTerminal()
    renderer = Renderer(out)
    assert renderer.styled is True
    renderer.tool_result(message(TextContent(text="[bold]not markup[/bold]"), is_error=True), {})
    text = out.getvalue()
    assert "\x1b[31m" in text  # red
    assert ANSI.sub("", text) == "read {} [error]\n[bold]not markup[/bold]\n"


def test_terminal_success_text_is_printed_verbatim(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    out = FakeTerminal()
    Renderer(out).tool_result(message(TextContent(text="x" * 300 + "\n")), {"a": 1})
    assert ANSI.sub("", out.getvalue()) == 'read {"a":1}\n' + "x" * 300 + "\n"


def test_terminal_plugin_table(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    out = FakeTerminal()
    Renderer(out).plugins(
        [{"name": "p", "distribution": None, "version": None, "module": "p", "hooks": ["pi_x"]}]
    )
    lines = [line.rstrip() for line in ANSI.sub("", out.getvalue()).splitlines()]
    assert [line.split() for line in lines] == [
        ["name", "distribution", "version", "hooks"],
        ["p", "-", "-", "pi_x"],
    ]


def test_call_result_plain_is_the_content_only() -> None:
    out = io.StringIO()
    Renderer(out).call_result(message(TextContent(text="boom"), is_error=True), {"a": 1})
    assert out.getvalue() == "boom\n"


def test_call_result_on_a_terminal_has_the_header(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    out = FakeTerminal()
    Renderer(out).call_result(message(TextContent(text="ok")), {"a": 1})
    assert ANSI.sub("", out.getvalue()) == 'read {"a":1}\nok\n'
