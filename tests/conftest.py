"""Shared test support: system components that tests need.

A test that needs a system program (node, rg, sshd, bwrap, podman, ...) asks for it with
``require_program("node")``: it skips with the reason when the program is absent, except under
CI (``CI=true``), where ``.ci/run`` installs every component and a missing one fails the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        reason = f"{name} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install it (.ci/run)")
        pytest.skip(reason)
    return path


@pytest.fixture
def require_program() -> Callable[[str], str]:
    """``require_program(name) -> absolute path`` or skip (fail under CI) when absent."""
    return _require_program


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """``small_filesystem(size) -> directory``: a real file system of ``size`` bytes (a tmpfs
    mounted below ``tmp_path``, unmounted after the test), to fill up: a full disk is then a
    real ``ENOSPC`` from the kernel, with its short writes. Mounting needs root
    (``CAP_SYS_ADMIN``): skip with the reason without it, fail under CI (which runs as root)."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        target = tmp_path / f"small-fs-{len(mounted)}"
        target.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            reason = f"cannot mount a tmpfs (needs root): {done.stderr.strip()}"
            if os.environ.get("CI") == "true":
                pytest.fail(f"{reason}; CI runs the tests as root")
            pytest.skip(reason)
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "--lazy", str(target)], check=False)


# -- checkpoints stay in the test session's own folder ------------------------------------
# `pi call`, `pi replay` and `pi run` record checkpoints by default, in $XDG_STATE_HOME: every
# test (and every `pi` process it starts) records into a folder of the test session, never
# into the user's ~/.local/state.


@pytest.fixture(scope="session", autouse=True)
def checkpoints_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory):
    """Point ``XDG_STATE_HOME`` (where checkpoints are kept) at a folder of this test session."""
    previous = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if previous is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = previous


# -- no process outlives the test session --------------------------------------------------
# The pytest process becomes a child subreaper: every process a test starts stays its
# descendant, even when orphaned (a background job of a finished bash command). After the last
# test, any living descendant is a leak: it is killed and the session fails.


def _living_descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            states[int(name)] = fields[0].decode()
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return [pid for pid in found if states.get(pid) not in ("Z", "X")]


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """Fail the session if a process started by a test is still alive after the last test."""
    import ctypes
    import signal
    import time

    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    yield
    deadline = time.monotonic() + 5
    leaked = _living_descendants(os.getpid())
    while leaked and time.monotonic() < deadline:  # let shielded cleanups finish
        time.sleep(0.05)
        leaked = _living_descendants(os.getpid())
    described = []
    for pid in leaked:
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            described.append(f"{pid}: {cmdline}")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    assert not leaked, "processes left alive by the tests:\n" + "\n".join(described)
