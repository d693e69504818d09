"""What checkpoints cost (issue 26), with the limits of the issue: P5 and P1 within 10 % of
their time with checkpoints off, 100 bash calls that change nothing in 10,000 files within 20 %,
and 1,000 edits of a 16 kB file stored in under 2 MB (``checkpoints_bench.py`` measures them).

The storage limit is checked in every test run (it does not depend on the machine's speed).
The time limits run with benchmarks (``--benchmark-only`` or ``PI_BENCHMARK=1``), as whole
``pi replay`` processes, on and off in turn; ``PI_BENCHMARK_ROUNDS`` (default 3) pairs each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from checkpoints_bench import LIMITS, STORAGE_LIMIT, measure

ROUNDS = int(os.environ.get("PI_BENCHMARK_ROUNDS", "3"))


def test_1000_edits_of_a_16kb_file_take_under_2mb() -> None:
    result = measure("S16", runs=1, warmup=0, scale=1.0)
    print(f"\nS16 {result['title']}: {result['bytes']:,} bytes")
    assert 0 < int(result["bytes"]) < STORAGE_LIMIT  # type: ignore[call-overload]


@pytest.mark.parametrize("name", ["P5", "P1", "B100"])
def test_checkpoints_cost_within_the_limit(request: pytest.FixtureRequest, name: str) -> None:
    if not (request.config.getoption("benchmark_only") or os.environ.get("PI_BENCHMARK")):
        pytest.skip("benchmark: run with --benchmark-only or PI_BENCHMARK=1")
    result = measure(name, runs=ROUNDS, warmup=1, scale=1.0)
    print(
        f"\n{name} {result['title']}: on {result['on']:.3f} s, off {result['off']:.3f} s,"
        f" ratio {result['ratio']:.3f}"
    )
    assert float(result["ratio"]) <= LIMITS[name]  # type: ignore[arg-type]
