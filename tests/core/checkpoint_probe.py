"""A test plugin (``pi -p checkpoint_probe``): before each tool call (nested ones too) it records
the workspace's tree as :func:`tree_of` reads it, so a test can compare a rewind's result with
the tree just before the call it rewound to."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pi_core import hookimpl
from pi_core._cli import run

SNAPSHOTS: dict[str, dict[str, tuple[Any, ...]]] = {}
"""Tool call id → the tree just before that call ran (the first time it was asked for)."""


def tree_of(root: str) -> dict[str, tuple[Any, ...]]:
    """Every entry below ``root`` (``.git`` left out): ``path → (kind, mode bits, content
    SHA-256 | symlink target | None)``, symlinks not followed."""
    found: dict[str, tuple[Any, ...]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("symlink", None, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)), None)
            else:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                found[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), digest)
    return found


@hookimpl
def pi_before_tool_call(context: Any) -> None:
    SNAPSHOTS.setdefault(context.tool_call.id, tree_of(context.session.cwd))


# -- running pi in this process --------------------------------------------------------------


def pi(*argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``pi ARGV`` in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        status = run(list(argv), stdout=out, stderr=err)
    finally:
        os.chdir(previous)
    return status, out.getvalue(), err.getvalue()


def message(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(calls), "stopReason": "toolUse"}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def replay(tmp_path: Path, ws: Path, messages: list[dict[str, Any]], *options: str) -> list[Any]:
    script = tmp_path / "session.jsonl"
    script.write_text("".join(json.dumps(m) + "\n" for m in messages))
    status, out, err = pi(
        "-p", "checkpoint_probe", "replay", str(script), "--cwd", str(ws), "--json", *options
    )
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


def killed_during_bash(ws: Path, script: str, scratch: Path) -> dict[str, tuple[Any, ...]]:
    """``pi call bash`` (a process, in ``ws``) of ``script`` then a long sleep, killed
    (``kill -9``, its command too) once ``script`` ran; returns the tree as it was then.
    ``scratch``: a folder outside ``ws`` for the marker files."""
    marker, pidfile = scratch / "started", scratch / "bash.pid"
    command = f"echo $$ > {pidfile}; {script}; : > {marker}; sleep 60"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "pi"), "call", "bash", json.dumps({"command": command})],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    tree = tree_of(str(ws))
    os.kill(proc.pid, signal.SIGKILL)
    try:
        os.killpg(os.getpgid(int(pidfile.read_text())), signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()
    return tree
