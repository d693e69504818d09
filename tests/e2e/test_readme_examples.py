"""The replay example the README shows runs every call successfully, with exact results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PI = Path(sys.executable).parent / "pi"


def test_first_replay_example(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(PI),
            "replay",
            str(ROOT / "docs/examples/first-replay.jsonl"),
            "--cwd",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [
        (r["toolCallId"], r["toolName"], r["isError"], r["content"][0]["text"]) for r in results
    ] == [
        ("c1", "write", False, "Successfully wrote to notes/todo.md"),
        ("c2", "read", False, "# Todo\n\n- write the parser\n- test the parser\n"),
        ("c3", "ls", False, "todo.md"),
        ("c4", "edit", False, "Successfully replaced 1 block(s) in notes/todo.md."),
        ("c5", "grep", False, "todo.md:3: - write the parser\ntodo.md:4: - test the parser"),
        ("c6", "find", False, "notes/todo.md"),
        ("c7", "bash", False, "5 notes/todo.md\ndone\n"),
    ]
    assert (tmp_path / "notes/todo.md").read_bytes() == (
        b"# Todo\n\n- write the parser\n- test the parser\n- ship it\n"
    )
