"""Atomic file replacement (port decision 8): mode, symlinks, failures, readers, killed writers."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pi_core._backend_kit.atomic import atomic_write_bytes


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_new_file_gets_default_mode(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    atomic_write_bytes(str(target), b"hello")
    assert target.read_bytes() == b"hello"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert sorted(os.listdir(tmp_path)) == ["new.txt"]


def test_overwrite_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_bytes(b"old")
    target.chmod(0o751)
    atomic_write_bytes(str(target), b"#!/bin/sh\n")
    assert target.read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(os.listdir(tmp_path)) == ["run.sh"]


def test_symlink_followed_link_kept(tmp_path: Path) -> None:
    """Case c27: the link's target is replaced, the link stays the same link."""
    (tmp_path / "dotfiles").mkdir()
    real = tmp_path / "dotfiles" / "bashrc"
    real.write_bytes(b"export A=1\n")
    os.symlink("dotfiles/bashrc", tmp_path / ".bashrc")
    os.symlink(".bashrc", tmp_path / "chain")
    atomic_write_bytes(str(tmp_path / "chain"), b"export A=3\n")
    assert real.read_bytes() == b"export A=3\n"
    assert os.readlink(tmp_path / ".bashrc") == "dotfiles/bashrc"
    assert os.readlink(tmp_path / "chain") == ".bashrc"
    assert sorted(os.listdir(tmp_path / "dotfiles")) == ["bashrc"]


def test_dangling_symlink_creates_target(tmp_path: Path) -> None:
    os.symlink("target.txt", tmp_path / "link")
    atomic_write_bytes(str(tmp_path / "link"), b"x")
    assert (tmp_path / "target.txt").read_bytes() == b"x"
    assert os.path.islink(tmp_path / "link")


def test_directory_is_eisdir(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as info:
        atomic_write_bytes(str(tmp_path), b"x")
    assert info.value.filename == str(tmp_path)


def test_missing_directory_is_enoent(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "f.txt"
    with pytest.raises(FileNotFoundError) as info:
        atomic_write_bytes(str(target), b"x")
    assert info.value.filename == str(target)
    assert os.listdir(tmp_path) == []


def test_failure_removes_temp_and_keeps_old(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(str(target), "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_concurrent_reader_never_sees_partial(tmp_path: Path) -> None:
    """Readers racing 120 replacements only ever see one whole version."""
    target = tmp_path / "f.txt"
    versions = [bytes([65 + i]) * 100_000 for i in range(4)]
    target.write_bytes(versions[0])
    seen: set[bytes] = set()
    bad: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            data = target.read_bytes()
            if data not in versions:
                bad.append(len(data))
            else:
                seen.add(data[:1])

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for i in range(120):
            atomic_write_bytes(str(target), versions[i % 4])
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert bad == []
    assert len(seen) >= 2


_WRITER = """
import sys
from pi_core._backend_kit.atomic import atomic_write_bytes
path = sys.argv[1]
i = 0
print("ready", flush=True)
while True:
    atomic_write_bytes(path, bytes([65 + i % 2]) * 8_000_000)
    i += 1
"""


@pytest.mark.parametrize("delay", [0.05, 0.13, 0.29, 0.41])
def test_killed_writer_leaves_old_or_new(tmp_path: Path, delay: float) -> None:
    """SIGKILL at an arbitrary moment leaves a whole old or new file, nothing between."""
    target = tmp_path / "big.bin"
    target.write_bytes(b"Z" * 8_000_000)
    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        time.sleep(delay)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    data = target.read_bytes()
    assert len(data) == 8_000_000
    assert data in (b"Z" * 8_000_000, b"A" * 8_000_000, b"B" * 8_000_000)
