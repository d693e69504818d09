"""Runs each conformance case's reference both ways and compares: as a node process of its own
(``compare.py``'s ``run``) and through ``ref_runner.mjs`` (test_conformance's runner, one for all
the cases, in the order given). Prints one line per case whose normalised results or workspace
snapshot differ, then a summary; exits 1 if any does. With ``--side ours`` the same for pi's
side: ``pi replay`` as a process of its own and as a fork of ``tests/pi_forks.py``'s server.

    uv run python tests/e2e/check_ref_runner.py [--ref ref16|ref] [--side ref|ours] [-k SUBSTRING]

The faux provider's api name, random per run, is masked. A case that differs is run once more
as a process of its own: if that run differs from the first one too, the case is not
deterministic (the line says so, and whether what ``compare.py`` compares, after its ``ignore``
fields and event window, still agrees).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import test_conformance as tc  # noqa: E402

import pi_forks  # noqa: E402


def _compared(compare: object, case: dict, lines: list) -> list:
    """What compare.py compares of the reference's results: its event window, without ignore."""
    if case.get("events"):
        lines = compare.tool_window(lines)  # type: ignore[attr-defined]
    return compare.strip(lines, case.get("ignore", []))  # type: ignore[attr-defined]


FAUX_API = re.compile(r"faux:\d+:[a-z0-9]+")


def _masked(lines: list) -> list:
    """``lines`` with the faux provider's api name, random per run (``faux:<ms>:<random>``, in
    the assistant messages of event cases), as ``faux:<api>``."""
    return json.loads(FAUX_API.sub("faux:<api>", json.dumps(lines)))


def _runner_cpu(script: str) -> tuple[int, float]:
    """The runner's (or fork server's) pid and CPU seconds (user+sys, with its reaped
    children), or (0, 0.0)."""
    runner = tc._runners.get(script) or pi_forks._servers.get(script)
    if runner is None or runner.proc.poll() is not None:
        return 0, 0.0
    fields = Path(f"/proc/{runner.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return runner.proc.pid, ticks / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="ref16", choices=["ref16", "ref"])
    parser.add_argument("--side", default="ref", choices=["ref", "ours"])
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    side, template = args.side, (tc.OURS if args.side == "ours" else "")
    ids = tc.CONFORMANCE16_IDS if args.ref == "ref16" else tc.UNCHANGED_IDS
    folders = (tc.CONFORMANCE / "cases", tc.CONFORMANCE / "cases16", tc.OWN16)
    # the environment _compare gives compare.py: the reference's node first, no venv bin
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin]
    node = tc.REF_NODES[args.ref]
    os.environ["PATH"] = os.pathsep.join(([str(node.parent)] if node else []) + path)
    os.chdir(tc.CONFORMANCE)
    compare = tc._comparer()
    fresh_run = compare.run
    runner_run = tc.runner_hook(compare.run, references=side == "ref", ours=side == "ours")
    differ = same = 0
    cpu = {"fresh": 0.0, "runner": 0.0}
    for case_id in ids:
        if args.k not in case_id:
            continue
        source = next(p for folder in folders for p in folder.rglob(f"{case_id}.json"))
        case = json.loads(source.read_text())
        case.setdefault("id", source.stem)
        outcomes = {}
        script = str(compare.HERE / args.ref / "replay.mjs") if side == "ref" else str(tc.PI)
        for way, run in (("fresh", fresh_run), ("runner", runner_run)):
            compare.run = run
            before, (pid, runner_before) = os.times(), _runner_cpu(script)
            outcomes[way] = compare.run_side(case, side, template, 120, args.ref)
            after, (pid_after, runner_after) = os.times(), _runner_cpu(script)
            if way == "fresh":
                cpu[way] += after.children_user + after.children_system
                cpu[way] -= before.children_user + before.children_system
            else:  # a runner that ended is counted by os.times once reaped
                cpu[way] += runner_after - (runner_before if pid == pid_after else 0)
        compare.run = fresh_run
        (fresh, fresh_files, _), (ours, our_files, _) = outcomes["fresh"], outcomes["runner"]
        fresh, ours = _masked(fresh), _masked(ours)
        if fresh == ours and fresh_files == our_files:
            same += 1
            continue
        differ += 1
        again, again_files, _ = compare.run_side(case, side, template, 120, args.ref)
        again = _masked(again)
        what = [
            n
            for n, a, b in (("results", fresh, ours), ("workspace", fresh_files, our_files))
            if a != b
        ]
        note = ""
        if again != fresh or again_files != fresh_files:
            agree = _compared(compare, case, fresh) == _compared(compare, case, ours)
            note = f" (not deterministic: two own-process runs differ too; compared part {'agrees' if agree else 'DIFFERS'})"
        print(f"DIFF {case_id}: {', '.join(what)}{note}")
        first = compare.first_difference(fresh, ours)
        if first:
            print(
                "  first difference (own process, then runner):",
                first.replace("expected", "own     "),
            )
        if fresh_files != our_files:
            print("  own process:", fresh_files, "\n  runner:     ", our_files)
        if note:
            print("  two own-process runs:", compare.first_difference(fresh, again))
    tc.close_runners()
    pi_forks.close_servers()
    what = "reference CPU (node" if side == "ref" else "pi's CPU (pi"
    print(
        f"{args.ref} {side}: {same} identical, {differ} differ; {what} and its children, user+sys): "
        f"own process {cpu['fresh']:.1f} s, runner {cpu['runner']:.1f} s"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    t0 = time.monotonic()
    status = main()
    print(f"wall {time.monotonic() - t0:.0f} s")
    sys.exit(status)
