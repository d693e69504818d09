"""The inter-process lock and the state directory (pi_core._backend_kit.interprocess)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from pi_core import ToolError
from pi_core._backend_kit.interprocess import lock_file_for, path_lock, state_dir

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
os.unlink(sys.argv[1])
"""


def _start_holder(lock: str) -> subprocess.Popen[str]:
    """Another process that holds ``flock`` on ``lock`` until a line arrives on its stdin."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, lock],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    return run


def test_state_dir_is_private_and_created(runtime: Path) -> None:
    assert state_dir() == str(runtime / "pi")
    assert (runtime / "pi").stat().st_mode & 0o777 == 0o700


def test_state_dir_open_to_others_is_refused(runtime: Path) -> None:
    (runtime / "pi").mkdir(mode=0o700)
    (runtime / "pi").chmod(0o777)
    with pytest.raises(PermissionError) as info:
        state_dir()
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EACCES,
        "pi's state directory is not a private directory of this user (mode 0700)",
        str(runtime / "pi"),
    )


async def test_the_lock_waits_for_another_process_and_leaves_no_file(runtime: Path) -> None:
    lock = lock_file_for("/some/file.txt")
    holder = _start_holder(lock)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        events: list[str] = []

        async def take() -> None:
            async with path_lock("/some/file.txt"):
                events.append("taken")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(take)
            await trio.sleep(0.3)
            events.append("released")
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
        assert events == ["released", "taken"]
    finally:
        holder.communicate(timeout=10)
    assert os.listdir(runtime / "pi") == []


async def test_waiting_for_the_lock_is_cancelled_at_once(runtime: Path) -> None:
    lock = lock_file_for("/other.txt")
    holder = _start_holder(lock)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with trio.move_on_after(0.2) as scope:
            async with path_lock("/other.txt"):
                pytest.fail("took a lock another process holds")
        assert scope.cancelled_caught
    finally:
        holder.communicate("\n", timeout=10)


async def test_an_unsafe_state_directory_fails_closed(runtime: Path) -> None:
    (runtime / "pi").mkdir(mode=0o700)
    (runtime / "pi").chmod(0o777)
    with pytest.raises(ToolError) as info:
        async with path_lock("/w/a.txt"):
            pytest.fail("mutated without the lock")
    assert str(info.value) == (
        "Cannot lock /w/a.txt against other pi processes: pi's state directory is not a "
        f"private directory of this user (mode 0700) ({runtime / 'pi'})"
    )
