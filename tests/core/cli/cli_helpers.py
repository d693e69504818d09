"""Helpers of the CLI tests (importable: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import json
import sys
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


def write_jsonl(path: Path, objects: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [without_timestamps(v) for v in value]
    return value
