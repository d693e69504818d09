"""The cost of the network proxy path (issue 25 point 6): a download through the bwrap sandbox's
bridge and pi's proxy against the same download from the host directly, and the proxy's memory
while many connections stream at once.

Usage::

    .venv/bin/python tests/benchmarks/network_proxy.py [--mb 200] [--runs 3]
        [--streams 50] [--stream-mb 20]

A ``python -m http.server`` in a subprocess serves a file of ``--mb`` MB from a temporary
directory on 127.0.0.1. ``direct``: ``curl -o /dev/null`` of it on this machine. ``proxied``:
the same curl in a bwrap sandbox with ``[sandbox.network] mode = "allow-list"`` (no network of
its own; the bridge inside, the proxy in this process), by the name ``bench.localhost``. Each
is run ``--runs`` times alternately; the medians and their ratio are printed (the issue's bound:
1.3), and the part of the proxied time that is the start of the sandbox and its bridge (the
median of a sandboxed ``true``). Then ``--streams`` curls of ``--stream-mb`` MB run at once in one sandboxed command and
the growth of this process's peak RSS (the proxy, its tasks and buffers) is printed (bound: 64 MB).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import trio

from pi_sandbox_plugin.backends.bwrap import BwrapBackend
from pi_sandbox_plugin.network.proxy import NetworkProxy
from pi_sandbox_plugin.network.rules import NetworkPolicy, parse_rule


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def start_server(args: argparse.Namespace, root: str) -> tuple[subprocess.Popen[bytes], int]:
    """``python -m http.server`` on a free port, serving ``big`` and ``small`` files."""
    served = os.path.join(root, "served")
    os.mkdir(served)
    with open(os.path.join(served, "big"), "wb") as handle:
        handle.truncate(args.mb * 1024 * 1024)
    with open(os.path.join(served, "small"), "wb") as handle:
        handle.truncate(args.stream_mb * 1024 * 1024)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        cwd=served,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            time.sleep(0.05)
    return server, port


async def main(args: argparse.Namespace, root: str, port: int) -> None:
    policy = NetworkPolicy((parse_rule(f"bench.localhost:{port}", "allow", "bench"),))
    proxy = NetworkProxy(policy)
    workspace = os.path.join(root, "ws")
    os.mkdir(workspace)
    backend = BwrapBackend(workspace, proxy=proxy)
    sink = bytearray()

    async def proxied(url_path: str, command: str | None = None) -> float:
        sink.clear()
        cmd = command or f"curl -sS -o /dev/null http://bench.localhost:{port}/{url_path}"
        start = time.perf_counter()
        code = await backend.exec(cmd, workspace, on_data=sink.extend)
        elapsed = time.perf_counter() - start
        assert code == 0, sink.decode()
        return elapsed

    async def direct(url_path: str) -> float:
        start = time.perf_counter()
        await trio.run_process(
            ["curl", "-sS", "-o", "/dev/null", f"http://127.0.0.1:{port}/{url_path}"],
            check=True,
            env={"PATH": os.environ["PATH"]},
        )
        return time.perf_counter() - start

    await proxied("small")  # warm up
    await direct("small")
    times: dict[str, list[float]] = {"direct": [], "proxied": []}
    for _ in range(args.runs):
        times["direct"].append(await direct("big"))
        times["proxied"].append(await proxied("big"))
    start_up = statistics.median([await proxied("", "true") for _ in range(args.runs)])
    d, p = statistics.median(times["direct"]), statistics.median(times["proxied"])
    print(f"{args.mb} MB download, median of {args.runs}:")
    print(f"  direct  {d:7.3f} s  ({args.mb / d:7.1f} MB/s)  runs {times['direct']}")
    print(f"  proxied {p:7.3f} s  ({args.mb / p:7.1f} MB/s)  runs {times['proxied']}")
    print(f"  ratio   {p / d:7.2f}  (bound 1.3)")
    print(
        f"  of which starting the sandbox and its bridge (`true`): {start_up:.3f} s; "
        f"ratio without it {(p - start_up) / d:.2f}"
    )
    before = peak_rss_mb()
    many = " ".join(
        f"curl -sS -o /dev/null http://bench.localhost:{port}/small &" for _ in range(args.streams)
    )
    took = await proxied("", f"{many} wait")
    after = peak_rss_mb()
    print(
        f"{args.streams} streams of {args.stream_mb} MB at once: {took:.2f} s; "
        f"peak RSS of the proxy's process {before:.1f} -> {after:.1f} MB "
        f"(+{after - before:.1f} MB, bound 64)"
    )
    await backend.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--stream-mb", type=int, default=20)
    options = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="pi-net-bench-")
    http_server, http_port = start_server(options, directory)
    try:
        trio.run(main, options, directory, http_port)
    finally:
        http_server.terminate()
        http_server.wait()
        shutil.rmtree(directory, ignore_errors=True)
