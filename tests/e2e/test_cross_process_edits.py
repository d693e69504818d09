"""Issue 10 item 7: no lost update across processes.

Several ``pi call edit`` processes (several agents in one workspace) change one file at once;
each holds the OS advisory lock of the file's real path around its read-modify-write
(:mod:`pi_core._backend_kit.interprocess`), so every edit lands. Real processes, started
together; each round is repeated, since a lost update shows only when two processes overlap.
The lock directory is made private to the test through ``XDG_RUNTIME_DIR``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PI = str(Path(sys.executable).with_name("pi"))

ROUNDS = 2


def _env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}


def _run_all(commands: list[list[str]], cwd: Path, env: dict[str, str]) -> list[tuple[int, str]]:
    """Start every command at once; their (exit code, first line of stdout + stderr) in order
    (``pi call edit`` prints the diff after its result text)."""
    procs = [
        subprocess.Popen(
            [PI, *command],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for command in commands
    ]
    outcomes = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        outcomes.append((proc.returncode, out.split("\n", 1)[0]))
    return outcomes


def _edit(path: str, old: str, new: str) -> list[str]:
    return ["call", "edit", json.dumps({"path": path, "edits": [{"oldText": old, "newText": new}]})]


@pytest.mark.slow  # 8 pi processes at once, twice: ~10-25 s
def test_eight_parallel_edits_of_one_file_all_land(tmp_path: Path) -> None:
    env = _env(tmp_path)
    target = tmp_path / "shared.txt"
    for round_ in range(ROUNDS):
        target.write_text("".join(f"slot {i:02d}: old\n" for i in range(8)))
        outcomes = _run_all(
            [
                _edit("shared.txt", f"slot {i:02d}: old", f"slot {i:02d}: new {round_}")
                for i in range(8)
            ],
            tmp_path,
            env,
        )
        assert outcomes == [(0, "Successfully replaced 1 block(s) in shared.txt.")] * 8
        assert target.read_text() == "".join(f"slot {i:02d}: new {round_}\n" for i in range(8))
    # nothing left behind: no temporary file beside the target, no lock file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shared.txt"]
    assert os.listdir(tmp_path / "run" / "pi") == []


@pytest.mark.slow
def test_parallel_writes_and_edits_of_one_file_lose_nothing(tmp_path: Path) -> None:
    """4 edits of distinct lines and 4 writes of the original text, interleaved, at once: all
    succeed, and the file is always one whole version (the 8 slots in order, each ``old`` or
    ``new``: an edit lands or a later write put the original back), never torn or mixed."""
    env = _env(tmp_path)
    target = tmp_path / "mixed.txt"
    original = "".join(f"slot {i}: old\n" for i in range(8))
    for _ in range(ROUNDS):
        target.write_text(original)
        commands = []
        for i in range(4):
            commands.append(_edit("mixed.txt", f"slot {i}: old", f"slot {i}: new"))
            commands.append(
                ["call", "write", json.dumps({"path": "mixed.txt", "content": original})]
            )
        outcomes = _run_all(commands, tmp_path, env)
        for i, (code, text) in enumerate(outcomes):
            if i % 2:  # a write always succeeds
                assert (code, text) == (0, "Successfully wrote to mixed.txt")
            else:
                assert (code, text) == (0, "Successfully replaced 1 block(s) in mixed.txt.")
        lines = target.read_text().splitlines()
        assert [line.rsplit(": ", 1)[0] for line in lines] == [f"slot {i}" for i in range(8)]
        assert {line.rsplit(": ", 1)[1] for line in lines} <= {"old", "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixed.txt", "run"]
