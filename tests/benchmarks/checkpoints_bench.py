"""What checkpoints cost (issue 26): each workload as a whole ``pi replay`` process, with
checkpoints on (the default) and off (``[checkpoints] enabled = false``), run in turn A B A B
after a warm-up, with the median of the pair-by-pair ratios (on / off).

Usage::

    uv run python tests/benchmarks/checkpoints_bench.py [--runs N] [--scale S] [--workloads P5,P1,B100]

Workloads (sizes at ``--scale 1``):

* ``P5``: 1,000 ``edit`` calls on one file in one batch (side_by_side.py's P5); limit: +10 %
* ``P1``: 1,000 ``read`` calls in one batch (side_by_side.py's P1); limit: +10 %
* ``B100``: 100 ``bash`` calls (``true``), one per turn, in a workspace of 10,000 files in 100
  folders, that change nothing; limit: +20 %. With checkpoints on, the first call reads the
  whole workspace once (its contents are stored), the other 99 only what inotify reports.
* ``S16``: the storage of 1,000 edits of one line each of a 16 kB file (one batch): the bytes
  the workspace's checkpoint database takes on disk; limit: 2 MB.

Each run has a state directory of its own (``XDG_STATE_HOME``), so no run starts from what
another stored; the inputs a run changes are rebuilt before it, outside the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from side_by_side import build

PI = shutil.which("pi", path=str(Path(sys.executable).parent)) or "pi"

LIMITS = {"P5": 1.10, "P1": 1.10, "B100": 1.20}
"""The most a workload may take with checkpoints on, as a multiple of its time with them off."""

STORAGE_LIMIT = 2_000_000
"""The most bytes 1,000 edits of a 16 kB file may take (S16)."""


@dataclass
class Case:
    name: str
    title: str
    messages: list[dict]
    reset: Callable[[], None]


def _bash_workspace(ws: Path, scale: float) -> Case:
    folders = max(1, round(100 * scale))
    for d in range(folders):
        folder = ws / f"d{d:03d}"
        folder.mkdir()
        for f in range(100):
            (folder / f"f{f:03d}.txt").write_bytes(b"x" * 100)
    calls = max(1, round(100 * scale))
    messages = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": f"b{i}",
                    "name": "bash",
                    "arguments": {"command": "true"},
                }
            ],
            "stopReason": "toolUse",
        }
        for i in range(calls)
    ]
    title = f"{calls} bash calls changing nothing in {folders * 100:,} files"
    return Case("B100", title, messages, lambda: None)


def _edits_of(path: Path, count: int, line: Callable[[int, str], bytes]) -> Case:
    original = b"".join(line(i, "original") for i in range(count))

    def reset() -> None:
        path.write_bytes(original)

    calls = [
        {
            "type": "toolCall",
            "id": f"e{i}",
            "name": "edit",
            "arguments": {
                "path": path.name,
                "edits": [
                    {
                        "oldText": line(i, "original").decode().rstrip("\n"),
                        "newText": line(i, "edited!!").decode().rstrip("\n"),
                    }
                ],
            },
        }
        for i in range(count)
    ]
    reset()
    messages = [{"role": "assistant", "content": calls, "stopReason": "toolUse"}]
    return Case("S16", f"{count:,} edits of a {len(original):,}-byte file", messages, reset)


def make_case(name: str, ws: Path, scale: float) -> Case:
    if name in ("P1", "P5"):
        workload = build(name, ws, scale)
        return Case(name, workload.title, workload.messages, workload.reset)
    if name == "B100":
        return _bash_workspace(ws, scale)
    if name == "S16":
        count = max(1, round(1000 * scale))
        return _edits_of(
            ws / "sixteen.txt", count, lambda i, word: b"%06d %s\n" % (i, word.encode())
        )
    raise SystemExit(f"unknown workload {name}")


def run_once(script: Path, ws: Path, state: Path, enabled: bool) -> float:
    config = ws.parent / ("on.toml" if enabled else "off.toml")
    config.write_text("" if enabled else "[checkpoints]\nenabled = false\n")
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    started = time.perf_counter()
    done = subprocess.run(
        [PI, "--config", str(config), "replay", str(script), "--cwd", str(ws), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pi failed: {done.stderr.decode()}")
    return elapsed


def store_bytes(state: Path) -> int:
    """The bytes the checkpoint databases in ``state`` take on disk (WAL checkpointed)."""
    import sqlite3

    total = 0
    for db in (state / "pi" / "checkpoints").glob("*.sqlite"):
        connection = sqlite3.connect(db)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
        connection.close()
        total += db.stat().st_size
    return total


def measure(name: str, runs: int, warmup: int, scale: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix=f"pi-cp-{name}-") as tmp:
        base = Path(tmp)
        ws = base / "ws"
        ws.mkdir()
        case = make_case(name, ws, scale)
        script = base / "messages.jsonl"
        script.write_text("".join(json.dumps(m) + "\n" for m in case.messages))
        state = base / "state"
        if name == "S16":
            case.reset()
            run_once(script, ws, state, True)
            size = store_bytes(state)
            return {"workload": name, "title": case.title, "bytes": size, "limit": STORAGE_LIMIT}
        on: list[float] = []
        off: list[float] = []
        for i in range(warmup + runs):
            pair = []
            for enabled in (True, False) if i % 2 == 0 else (False, True):
                case.reset()
                pair.append((enabled, run_once(script, ws, state, enabled)))
            if i >= warmup:
                on += [t for e, t in pair if e]
                off += [t for e, t in pair if not e]
        ratios = [a / b for a, b in zip(on, off, strict=True)]
        return {
            "workload": name,
            "title": case.title,
            "on": statistics.median(on),
            "off": statistics.median(off),
            "ratio": statistics.median(ratios),
            "limit": LIMITS[name],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--workloads", default="P5,P1,B100,S16")
    args = parser.parse_args()
    failed = False
    for name in args.workloads.split(","):
        result = measure(name, args.runs, args.warmup, args.scale)
        if "bytes" in result:
            ok = int(result["bytes"]) <= STORAGE_LIMIT  # type: ignore[call-overload]
            print(f"{name} {result['title']}: {int(result['bytes']):,} bytes (limit {STORAGE_LIMIT:,})"  # type: ignore[call-overload]
                  f" {'ok' if ok else 'OVER'}")  # fmt: skip
        else:
            ok = float(result["ratio"]) <= float(result["limit"])  # type: ignore[arg-type]
            print(
                f"{name} {result['title']}: on {result['on']:.3f} s, off {result['off']:.3f} s,"
                f" median ratio {result['ratio']:.3f} (limit {result['limit']}) {'ok' if ok else 'OVER'}"
            )
        failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
