"""Helpers of the CLI tests (importable: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PI = Path(sys.executable).parent / "pi"
"""The installed ``pi`` console script of this environment."""


@dataclass
class Result:
    """A finished ``pi``: exit ``status``, ``out`` and ``err`` text."""

    status: int
    out: str
    err: str

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """A ``toolCall`` content block as JSON."""
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def start_waiting(argv: list[str], marker: Path, never: str | None = None) -> subprocess.Popen[str]:
    """Start ``pi ARGV`` (text pipes, no stdin) and wait up to 30 s until ``marker`` exists (the
    tool under test writes it once it runs); fails with ``never`` when it does not appear."""
    proc = subprocess.Popen(
        [str(PI), *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, never
        time.sleep(0.02)
    return proc


def write_jsonl(path: Path, objects: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [without_timestamps(v) for v in value]
    return value
