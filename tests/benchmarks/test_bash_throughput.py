"""Throughput and memory of streaming 1 GB of output through the bash tool, next to ``cat``
of the same bytes read from a pipe by Python (the transport alone) and ``cat`` into a file
(the tool also writes every byte to its full-output file, so the disk bounds it).

Skipped in a normal test run. Run with::

    pytest tests/benchmarks/test_bash_throughput.py --benchmark-only
    PI_BENCHMARK=1 pytest tests/benchmarks            # also runs them (with benchmarks on)

``PI_BENCHMARK_BYTES`` changes the size (default 1 GiB). Each test records ``mb_per_s`` and
``peak_rss_growth_mb`` (the peak resident memory of the test process during the run above what
it held before: the high-water mark is reset through ``/proc/self/clear_refs``) in the
benchmark's ``extra_info`` and prints them.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest
import trio

from pi_builtin_tools.shell.bash import create_bash_tool_definition
from pi_builtin_tools.shell.local import LocalBashOperations

SIZE = int(os.environ.get("PI_BENCHMARK_BYTES", str(1 << 30)))
BLOCK = b"".join(b"%07d some build log output, a typical line of text\n" % i for i in range(18000))
MAX_RSS_GROWTH = 16 * 1024 * 1024

pytestmark = pytest.mark.benchmark(group="bash-1GB-output", min_rounds=1, warmup=False)


@pytest.fixture(scope="module", autouse=True)
def only_when_benchmarking(request: pytest.FixtureRequest) -> None:
    """Skips before ``big_file`` writes its gigabyte (an autouse fixture of the same scope runs
    first)."""
    if not (request.config.getoption("benchmark_only") or os.environ.get("PI_BENCHMARK")):
        pytest.skip("benchmark: run with --benchmark-only or PI_BENCHMARK=1")


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("bench") / "output.log"
    with open(path, "wb") as f:
        written = 0
        while written < SIZE:
            block = BLOCK[: SIZE - written]
            f.write(block)
            written += len(block)
    return str(path)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


class MemoryProbe:
    """Peak RSS growth of this process across a run, in bytes."""

    def __enter__(self) -> MemoryProbe:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        self.before = _status_kb("VmRSS") * 1024
        return self

    def __exit__(self, *exc: object) -> None:
        self.growth = _status_kb("VmHWM") * 1024 - self.before


def _report(benchmark, label: str, growths: list[int]) -> None:
    seconds = benchmark.stats.stats.min
    benchmark.extra_info["mb_per_s"] = round(SIZE / seconds / 1e6, 1)
    benchmark.extra_info["peak_rss_growth_mb"] = round(max(growths) / 1e6, 2)
    print(
        f"\n{label}: {SIZE / 1e6:.0f} MB in {seconds:.2f} s = {SIZE / seconds / 1e6:.0f} MB/s, "
        f"peak RSS growth {max(growths) / 1e6:.2f} MB"
    )


def test_cat_read_from_a_pipe(benchmark, big_file: str) -> None:
    growths: list[int] = []

    def run() -> int:
        total = 0
        with MemoryProbe() as probe:
            with subprocess.Popen(["cat", big_file], stdout=subprocess.PIPE) as proc:
                assert proc.stdout is not None
                while chunk := proc.stdout.read1(256 * 1024):
                    total += len(chunk)
        growths.append(probe.growth)
        return total

    assert benchmark.pedantic(run, rounds=3) == SIZE
    _report(benchmark, "cat | python", growths)


def test_cat_into_a_file(benchmark, big_file: str, tmp_path) -> None:
    """What the tool must also do: write every byte to the full-output file."""
    growths: list[int] = []
    copy = tmp_path / "copy.log"

    def run() -> int:
        with MemoryProbe() as probe:
            with open(copy, "wb") as out:
                subprocess.run(["cat", big_file], stdout=out, check=True)
        growths.append(probe.growth)
        size = copy.stat().st_size
        copy.unlink()
        return size

    assert benchmark.pedantic(run, rounds=3) == SIZE
    _report(benchmark, "cat > file", growths)


def test_bash_tool_streams_1gb(benchmark, big_file: str, tmp_path) -> None:
    tempfile.tempdir = str(tmp_path)
    growths: list[int] = []
    tool = create_bash_tool_definition(str(tmp_path), LocalBashOperations())
    try:

        def run() -> str:
            with MemoryProbe() as probe:
                result = trio.run(tool.execute, "bench", {"command": f"cat {big_file}"}, None, None)
            growths.append(probe.growth)
            path = result.details["fullOutputPath"]
            assert os.path.getsize(path) == SIZE
            os.unlink(path)
            return result.text

        text = benchmark.pedantic(run, rounds=3)
    finally:
        tempfile.tempdir = None
    assert "[Showing lines" in text
    _report(benchmark, "bash tool", growths)
    assert max(growths) < MAX_RSS_GROWTH
