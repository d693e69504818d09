"""``pi run`` in a real pseudo-terminal (issue 5 item 3): the screen text, its colours, bash
output shown live while the command runs, and Ctrl-C typed on the terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import PI, write_jsonl
from test_run import DEMO_OUTPUT, DEMO_SESSION

SGR = re.compile(r"\x1b\[[0-9;]*m")
RED, GREEN, DIM, BOLD_CYAN, BOLD = "\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[1;36m", "\x1b[1m"
RESET = "\x1b[0m"


class Terminal:
    """``pi ARGS`` with a pseudo-terminal (120x40) as its controlling terminal, stdout and
    stderr; :meth:`read_until` collects what it writes."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

        def controlling_terminal() -> None:
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [str(PI), *args],
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(slave)
        self.master = master
        self.raw = ""

    def read_until(self, text: str, timeout: float = 30) -> None:
        """Read until ``text`` is on the :attr:`screen`."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} did not appear in {self.raw!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: the program closed the terminal
                    data = b""
                assert data, f"{text!r} did not appear in {self.raw!r}"
                self.raw += data.decode("utf-8")

    def finish(self) -> int:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.raw += data.decode("utf-8")
        os.close(self.master)
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        """Stop pi and everything it started (a failed test must not leave them running)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

    @property
    def screen(self) -> str:
        """The text a person sees: colours removed, terminal line ends as ``\\n``."""
        return SGR.sub("", self.raw).replace("\r\n", "\n")


@pytest.fixture
def terminal(plugin_env: Path) -> Iterator[Callable[[list[str]], Terminal]]:
    """``terminal(args)``: start pi on a new pseudo-terminal in ``plugin_env``."""
    started: list[Terminal] = []

    def start(args: list[str]) -> Terminal:
        started.append(Terminal(args, plugin_env))
        return started[-1]

    yield start
    for term in started:
        term.kill()


def test_the_demo_on_a_terminal_shows_the_same_text_in_colour(
    terminal: Callable[[list[str]], Terminal], plugin_env: Path
) -> None:
    term = terminal(["-p", "pi_builtin_tools.plugin", "run", "--cwd", "ws"])
    term.read_until(" tool calls, ")
    assert term.finish() == 0
    screen = term.screen
    body, closing = screen.rsplit("\n\n", 1)
    assert body + "\n\n" == DEMO_OUTPUT.format(session=DEMO_SESSION, cwd=plugin_env / "ws")
    assert re.fullmatch(r"6 turns, 5 tool calls, 1 error, \d+\.\ds\n", closing)
    raw = term.raw
    assert f"{BOLD_CYAN}• bash $ python3 test_stats.py{RESET}" in raw
    assert f"{RED}  Command exited with code 1{RESET}" in raw  # the failed test run
    assert f"{RED}  - 6     return sum(values) / (len(values) - 1){RESET}" in raw
    assert f"{GREEN}  + 6     return sum(values) / len(values){RESET}" in raw
    assert f"{DIM}  … 8 more lines{RESET}" in raw
    assert f"{BOLD}6 turns, 5 tool calls, 1 error, " in raw


def test_bash_output_appears_while_the_command_runs(
    terminal: Callable[[list[str]], Terminal], plugin_env: Path
) -> None:
    script = write_jsonl(
        plugin_env / "s.jsonl",
        [
            {"role": "assistant", "stopReason": "toolUse", "content": [
                {"type": "toolCall", "id": "b1", "name": "bash",
                 "arguments": {"command": "echo one; sleep 2; echo two"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    )  # fmt: skip
    term = terminal(
        ["-p", "pi_builtin_tools.plugin", "run", "x", "--model", f"scripted:{script.name}"]
    )
    term.read_until("  one\n")
    assert "  two" not in term.screen  # still running: "one" came from a live update
    assert term.proc.poll() is None
    term.read_until("  two\n")
    assert term.finish() == 0
    body = term.screen.split("\n", 3)[3]
    assert body.startswith("• bash $ echo one; sleep 2; echo two\n  one\n  two\n\ndone\n\n")


def test_ctrl_c_typed_on_the_terminal_aborts_the_run(
    terminal: Callable[[list[str]], Terminal], plugin_env: Path
) -> None:
    script = write_jsonl(
        plugin_env / "s.jsonl",
        [
            {"role": "assistant", "stopReason": "toolUse", "content": [
                {"type": "toolCall", "id": "b1", "name": "bash",
                 "arguments": {"command": "echo waiting; sleep 60"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "never"}]},
        ],
    )  # fmt: skip
    term = terminal(
        ["-p", "pi_builtin_tools.plugin", "run", "x", "--model", f"scripted:{script.name}"]
    )
    term.read_until("  waiting\n")
    os.write(term.master, b"\x03")  # Ctrl-C
    term.read_until("interrupted: ")
    assert term.finish() == 130
    body, closing = term.screen.split("\n", 3)[3].rsplit("\n\n", 1)
    # the terminal echoes the Ctrl-C as ^C where the cursor is
    assert body == "• bash $ echo waiting; sleep 60\n  waiting\n^C  Command aborted\n\naborted"
    assert re.fullmatch(r"interrupted: 2 turns, 1 tool call, 1 error, \d+\.\ds\n", closing)
    assert f"{RED}  Command aborted{RESET}" in term.raw
