"""How pi's time and memory grow with its inputs: the workloads of ``side_by_side.py`` at several
sizes, pi alone, one table per tool for docs/explanation/performance.md ("Scaling").

Usage::

    uv run python tests/benchmarks/scaling.py [--runs N] [--workloads P1,P3] [--scales 0.1,0.3,1]

Each size is ``side_by_side.py``'s workload at ``--scale S`` (P4's tree, P3's output, P8's line
and so on, times ``S``); every row is the median of ``--runs`` whole ``pi replay`` processes after
one warm-up, with the peak RSS of the largest process (pi or the ripgrep it runs). Start-up is
in every figure: the P7 row is the floor. The output is Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from side_by_side import build, check_output, run_once

# What grows in each workload, and the scales measured by default (1 = the goals' sizes).
GROWS = {
    "P1": ("read, batch size", "read calls in one batch", 1000, "0.1,0.3,1,3"),
    "P2": ("read, file size", "MB file (read at a quarter in)", 392, "0.1,0.3,1"),
    "P3": ("bash, output size", "MiB of output", 1024, "0.1,0.3,1,3"),
    "P4": ("grep, tree size", "GB tree (no match)", 3.69, "0.03,0.1,0.3,1"),
    "P5": ("edit, batch size", "edits of one file in one batch", 1000, "0.1,0.3,1,3"),
    "P6": ("edit, file size", "MB file (one edit)", 50, "0.1,0.3,1,2.5"),
    "P7": ("start-up", "", 0, "1"),
    "P8": ("grep, line length", "MB line", 100, "0.1,0.3,1,3"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(GROWS))
    parser.add_argument("--scales", help="the same scales for every workload, e.g. 0.1,1")
    parser.add_argument("--pi", default=shutil.which("pi", path=str(Path(sys.executable).parent)))
    args = parser.parse_args()
    for name in args.workloads.split(","):
        title, unit, size, scales = GROWS[name]
        print(f"\n**{title}** ({name})\n")
        print(f"| {unit or 'run'} | time s | peak RSS MB |\n|---|---|---|")
        for scale in map(float, (args.scales or scales).split(",")):
            base = Path(tempfile.mkdtemp(prefix="pi-scaling-"))
            try:
                ws = base / name
                ws.mkdir()
                wl = build(name, ws, scale)
                messages = base / "messages.jsonl"
                messages.write_text("".join(json.dumps(m) + "\n" for m in wl.messages))
                argv = [args.pi, "replay", str(messages), "--cwd", str(ws), "--json"]
                walls, peaks = [], []
                for i in range(1 + args.runs):
                    wl.reset()
                    tmp = base / "tmp"
                    tmp.mkdir()
                    run = run_once(
                        argv, base / "out.jsonl", 1800, {**os.environ, "TMPDIR": str(tmp)}
                    )
                    shutil.rmtree(tmp, ignore_errors=True)
                    problem = check_output(base / "out.jsonl", wl.calls) or wl.check(ws)
                    if run.status or problem:
                        print(f"| {name} at {scale}: FAILED ({run.status}, {problem}) | | |")
                        break
                    if i:
                        walls.append(run.wall)
                        peaks.append(run.rss_mb)
                else:
                    label = f"{size * scale:,.4g}" if size else wl.title
                    print(
                        f"| {label} | {statistics.median(walls):.2f} | {max(peaks):.0f} |",
                        flush=True,
                    )
            finally:
                shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
