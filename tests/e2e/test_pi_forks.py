"""The conformance tests' fork server (``tests/pi_forks.py``): a command run as a fork of a
process that has imported pi gives what the same command gives as a new process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pi_forks
from support import descendants

PI = str(Path(sys.executable).parent / "pi")


@pytest.fixture(autouse=True)
def servers() -> Iterator[None]:
    yield
    pi_forks.close_servers()


def new_process(argv: list[str]) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_fork_gives_what_a_new_process_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit status, stdout and stderr of several commands, run in turn by one server: each
    sees its own working directory, environment and argv."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello\n")
    call = {"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}},
        {"type": "toolCall", "id": "c2", "name": "bash",
          "arguments": {"command": "echo \"$GIVEN\"; pwd"}},
    ]}  # fmt: skip
    (tmp_path / "case.jsonl").write_text(json.dumps(call) + "\n")
    commands = [
        [PI, "replay", "case.jsonl", "--json"],
        [PI, "replay", "missing.jsonl", "--json"],
        [PI, "call", "read", '{"path": "a.txt", "offset": 5}'],
        [PI, "call", "nope", "{}"],
        [PI, "--bogus"],
        [PI, "replay", "case.jsonl", "--json"],
    ]
    monkeypatch.setenv("GIVEN", "a b 'c' $d")
    for argv in commands:
        got, want = pi_forks.run_pi(argv, 60), new_process(argv)
        masked = [(status, TIMESTAMP.sub(b"0", out), err) for status, out, err in (got, want)]
        assert masked[0] == masked[1], argv
    assert len(pi_forks._servers) == 1
    status, out, _err = pi_forks.run_pi(commands[0], 60)
    assert status == 0 and b"a b 'c' $d\\n" + str(tmp_path).encode() + b"\\n" in out


TIMESTAMP = __import__("re").compile(rb'"timestamp":\d+')


def test_a_new_environment_gets_a_new_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server imported pi with the environment it was started with: a command with another
    one gets a server started with that; PYTEST_CURRENT_TEST alone changes nothing."""
    argv = [PI, "--version"]
    first = pi_forks.run_pi(argv, 60)
    pid = pi_forks._servers[PI].proc.pid
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")
    assert pi_forks.run_pi(argv, 60) == first
    assert pi_forks._servers[PI].proc.pid == pid
    monkeypatch.setenv("PI_FORKS_TEST", "1")
    assert pi_forks.run_pi(argv, 60) == first
    assert pi_forks._servers[PI].proc.pid != pid


def test_a_command_past_its_timeout_is_killed() -> None:
    """As ``subprocess.run``: the command is killed (SIGKILL) and TimeoutExpired raised with
    what it wrote; the server runs the next command."""
    argv = [PI, "call", "bash", json.dumps({"command": "echo started; exec sleep 30"})]
    # what lived below this test process before (another test's sshd, a reference runner)
    before = set(descendants(os.getpid(), living=True))
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        pi_forks.run_pi(argv, 2)
    assert 2 <= time.monotonic() - started < 10
    server = pi_forks._servers[PI].proc.pid
    assert descendants(server, living=True) == []
    # what the killed pi left (its bash supervisor ends the tree once pi's lifeline closes):
    # only processes this test started, never the others below this test process
    deadline = time.monotonic() + 10
    while left := set(descendants(os.getpid(), living=True)) - before - {server}:
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    assert raised.value.timeout == 2
    assert pi_forks.run_pi([PI, "--bogus"], 60)[0] == 2


def test_a_killed_server_is_replaced() -> None:
    argv = [PI, "--version"]
    first = pi_forks.run_pi(argv, 60)
    server = pi_forks._servers[PI].proc
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()
    assert pi_forks.run_pi(argv, 60) == first
    assert pi_forks._servers[PI].proc.pid != server.pid
