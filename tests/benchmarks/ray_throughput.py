"""Throughput of many pi sessions on a Ray cluster as nodes are added (issue 16), and the costs
of the Ray backend: actor start, one bash call, one file operation.

Usage::

    .venv/bin/python tests/benchmarks/ray_throughput.py [--sessions 8] [--slots 2]
        [--calls 4] [--sleep 0.5] [--address HOST:PORT --nodes N]

Without ``--address`` it starts a local cluster of simulated nodes on this machine
(``tests/sandbox/ray_support.py``): first the head alone, then with a second raylet. Each node
offers ``--slots`` units of the custom resource ``pi_slot`` and each session takes one
(``[sandbox.ray] resources = {pi_slot = 1}``), so a node runs at most ``--slots`` sessions at a
time, as a real node runs as many as its CPUs, memory and disk allow. Each session is a
recorded file of ``--calls`` bash calls (``sleep --sleep; echo``), one ``write`` and one
``read``, replayed with ``pi replay --parallel SESSIONS`` (every session submitted at once, Ray
queueing those without a free slot). The table shows, per number of nodes, the wall time, the
sessions per second and the tool calls per second; every session's results are checked (all
``ok``, every call answered).

The commands sleep rather than compute, because the simulated nodes share this machine's
CPUs: with real nodes, put real work in the recorded sessions. ``--address`` measures an
existing cluster once (``--nodes`` only labels the row; run it again after adding nodes).

The cost lines run one session in-process: the time to place and start its actor, then the
median of 20 ``true`` bash calls and of 20 ``stat`` calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "sandbox"))

from ray_support import RayCluster, ray_environment  # noqa: E402

PI = str(Path(sys.executable).with_name("pi"))


def write_sessions(folder: Path, count: int, calls: int, sleep: float) -> list[str]:
    """``count`` recorded sessions of ``calls`` bash calls, a write and a read."""
    files = []
    for index in range(count):
        messages = [
            [
                {
                    "type": "toolCall",
                    "id": f"b{n}",
                    "name": "bash",
                    "arguments": {"command": f"sleep {sleep}; echo session-{index}-{n}"},
                }
            ]
            for n in range(calls)
        ]
        messages.append(
            [
                {
                    "type": "toolCall",
                    "id": "w",
                    "name": "write",
                    "arguments": {"path": "out.txt", "content": f"session {index}\n"},
                }
            ]
        )
        messages.append(
            [{"type": "toolCall", "id": "r", "name": "read", "arguments": {"path": "out.txt"}}]
        )
        file = folder / f"session-{index}.jsonl"
        file.write_text(
            "".join(
                json.dumps({"role": "assistant", "content": m, "stopReason": "toolUse"}) + "\n"
                for m in messages
            )
        )
        files.append(str(file))
    return files


def replay_all(address: str, files: list[str], folder: Path, calls: int) -> float:
    """Wall seconds of ``pi replay --parallel len(files) FILES --json`` (results checked)."""
    config = folder / "pi.toml"
    config.write_text(
        f'[sandbox]\nbackend = "ray"\n[sandbox.ray]\naddress = "{address}"\n'
        "resources = {pi_slot = 1}\nstart_timeout = 600\n"
    )
    cwd = folder / "cwd"
    cwd.mkdir(exist_ok=True)
    start = time.monotonic()
    result = subprocess.run(
        [PI, "--config", str(config), "replay", "--parallel", str(len(files)), *files, "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=ray_environment(),
        check=False,
    )
    wall = time.monotonic() - start
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    bad = [line["file"] for line in lines if line["status"] != "ok" or line["calls"] != calls + 2]
    if result.returncode != 0 or len(lines) != len(files) or bad:
        print(f"CHECK FAILED: exit {result.returncode}, {bad}\n{result.stderr}", flush=True)
    return wall


def costs(address: str) -> None:
    """Actor start, one bash call and one file operation, measured in this process."""
    import trio

    from pi_core.testing.bash_contract import Recorder
    from pi_sandbox_plugin.backends.ray import RayBackend

    async def measure() -> None:
        backend = RayBackend(address=address, resources={"pi_slot": 1})
        begin = time.monotonic()
        await backend.start()
        started = time.monotonic() - begin
        bash, stat = [], []
        for _ in range(20):
            begin = time.monotonic()
            await backend.exec("true", backend.workspace, on_data=Recorder())
            bash.append(time.monotonic() - begin)
            begin = time.monotonic()
            await backend.stat(backend.workspace)
            stat.append(time.monotonic() - begin)
        await backend.aclose()
        print(f"actor start (placement, process, workspace): {started * 1000:.0f} ms")
        print(f"one bash call (true), median of 20: {statistics.median(bash) * 1000:.1f} ms")
        print(f"one file operation (stat), median of 20: {statistics.median(stat) * 1000:.1f} ms")

    trio.run(measure)
    import ray

    ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--slots", type=int, default=2, help="sessions a node runs at once")
    parser.add_argument("--calls", type=int, default=4, help="bash calls per session")
    parser.add_argument("--sleep", type=float, default=0.5, help="seconds each command sleeps")
    parser.add_argument("--address", help="an existing cluster (measured once)")
    parser.add_argument("--nodes", type=int, default=0, help="with --address: the row's label")
    args = parser.parse_args()
    rows: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="pi-ray-bench-") as scratch:
        folder = Path(scratch)
        files = write_sessions(folder, args.sessions, args.calls, args.sleep)
        if args.address:
            rows.append((args.nodes, replay_all(args.address, files, folder, args.calls)))
            costs(args.address)
        else:
            cluster = RayCluster(
                folder,
                head_resources={"head_node": 1, "pi_slot": args.slots},
                worker_resources={"worker_node": 1, "pi_slot": args.slots},
            )
            try:
                cluster.start(workers=0)
                rows.append((1, replay_all(cluster.address, files, folder, args.calls)))
                cluster.add_worker()
                rows.append((2, replay_all(cluster.address, files, folder, args.calls)))
                costs(cluster.address)
            finally:
                cluster.stop()
    calls = args.sessions * (args.calls + 2)
    print(f"\n{args.sessions} sessions of {args.calls + 2} tool calls, {args.slots} per node")
    print("nodes  wall s  sessions/s  calls/s")
    for nodes, wall in rows:
        print(f"{nodes:5d}  {wall:6.1f}  {args.sessions / wall:10.2f}  {calls / wall:7.1f}")


if __name__ == "__main__":
    main()
