"""The workloads P1-P8 of the performance goals (docs/explanation/performance.md), each timed as
a whole ``pi replay`` process: start-up, plugin loading, the tool calls and the JSON output.
The inputs are those of ``side_by_side.py`` (which also times the reference Pi on them).

Skipped in a normal test run. Run with::

    pytest tests/benchmarks/test_workloads.py --benchmark-only
    PI_BENCHMARK=1 pytest tests/benchmarks            # also runs them (with benchmarks on)

``PI_BENCHMARK_SCALE`` multiplies every input size (default 1: the sizes of the goals table;
0.1 for a quick run), ``PI_BENCHMARK_ROUNDS`` sets the rounds (default 3). Each test checks
the run's results (every call answered, none an error, no edit lost) and records
``peak_rss_mb``, the largest peak resident memory of the pi process over the rounds, in the
benchmark's ``extra_info``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from side_by_side import Run, build, check_output, run_once

SCALE = float(os.environ.get("PI_BENCHMARK_SCALE", "1"))
ROUNDS = int(os.environ.get("PI_BENCHMARK_ROUNDS", "3"))
PI = shutil.which("pi", path=str(Path(sys.executable).parent)) or "pi"


@pytest.fixture(autouse=True)
def only_when_benchmarking(request: pytest.FixtureRequest) -> None:
    if not (request.config.getoption("benchmark_only") or os.environ.get("PI_BENCHMARK")):
        pytest.skip("benchmark: run with --benchmark-only or PI_BENCHMARK=1")


@pytest.mark.parametrize("name", ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8"])
def test_workload(benchmark, name: str, tmp_path: Path) -> None:
    ws = tmp_path / name
    ws.mkdir()
    workload = build(name, ws, SCALE)
    messages = tmp_path / "messages.jsonl"
    messages.write_text("".join(json.dumps(m) + "\n" for m in workload.messages))
    out = tmp_path / "out.jsonl"
    argv = [PI, "replay", str(messages), "--cwd", str(ws), "--json"]
    runs: list[Run] = []

    tmp = tmp_path / "tmp"  # the run's temporary directory: P3's 1 GiB full-output files

    def setup() -> tuple[tuple, dict]:
        workload.reset()
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        return (), {}

    def run() -> None:
        runs.append(run_once(argv, out, timeout=900, env={**os.environ, "TMPDIR": str(tmp)}))

    benchmark.group = f"{name}: {workload.title}"
    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, warmup_rounds=0)
    assert [r.status for r in runs] == [0] * ROUNDS
    assert check_output(out, workload.calls) is None
    assert workload.check(ws) is None
    peak = max(r.rss_mb for r in runs)
    benchmark.extra_info["peak_rss_mb"] = round(peak, 1)
    print(
        f"\n{name} {workload.title}: median {benchmark.stats.stats.median:.3f} s, "
        f"peak RSS {peak:.0f} MB"
    )
