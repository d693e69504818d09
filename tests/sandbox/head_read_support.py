"""What the one-hop head read tests of the remote backends share: a directory of files of every
kind, the names read in it, a comparable summary of a ``read_head`` result, and a wrapper
program that counts how often a client (``podman``, ``ssh``) is started."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from pi_core.backends import LocalFileOperations

HEAD_NAMES = [
    "a.txt", "empty", "sub", "link", "dangling", "fifo", "big", "nope", "a.txt/x", "a\u00a0b.txt",
]  # fmt: skip
"""Names :func:`make_head_files` makes or leaves missing (the last falls back to ``a b.txt``)."""

WHOLE_LIMIT = 100_000
HEAD_SIZE = 65_536


def make_head_files(root: Path) -> None:
    """A text file, an empty one, a directory, symbolic links (to the text, to nothing), a
    FIFO, a file larger than :data:`WHOLE_LIMIT` and a name with a plain space."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_bytes(b"hello\nworld\n")
    (root / "empty").write_bytes(b"")
    (root / "sub").mkdir()
    (root / "link").symlink_to("a.txt")
    (root / "dangling").symlink_to("gone")
    os.mkfifo(root / "fifo")
    (root / "big").write_bytes(bytes(range(256)) * 800)
    (root / "a b.txt").write_bytes(b"spaced\n")
    for entry in root.iterdir():  # whole seconds: each backend's mtime is exact
        os.utime(entry, (1_700_000_000, 1_700_000_000), follow_symlinks=False)


def summary(head: Any, root: str) -> Any:
    """``read_head``'s ``(path, info, data)`` with ``root`` replaced by ``<root>`` and errors
    as ``(class, errno, filename)``."""
    assert head is not None
    path, info, data = head

    def named(text: str) -> str:
        return text.replace(root, "<root>")

    if isinstance(info, OSError):
        info = (type(info).__name__, info.errno, named(str(info.filename)))
    else:
        info = (info.kind, info.size, info.mode, info.mtime)
    if isinstance(data, OSError):
        data = (type(data).__name__, data.errno, named(str(data.filename)))
    return named(path), info, data


async def local_heads(root: Path) -> list[Any]:
    """The summaries of the local backend's ``read_head`` of :data:`HEAD_NAMES` in ``root``."""
    local = LocalFileOperations()
    return [
        summary(
            await local.read_head(name, str(root), whole_limit=WHOLE_LIMIT, head_size=HEAD_SIZE),
            str(root),
        )
        for name in HEAD_NAMES
    ]


class CountingProgram:
    """A program that appends a line to a log each time it starts, then runs ``program``."""

    def __init__(self, directory: Path, program: str) -> None:
        real = shutil.which(program)
        assert real is not None, program
        self.log = directory / f"{program}.calls"
        self.log.write_text("")
        self.path = str(directory / f"counting-{program}")
        Path(self.path).write_text(f'#!/bin/sh\necho "$1" >> "{self.log}"\nexec "{real}" "$@"\n')
        os.chmod(self.path, stat.S_IRWXU)

    def calls(self) -> int:
        """How many times it started so far."""
        return len(self.log.read_text().splitlines())
