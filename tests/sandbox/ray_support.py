"""Test support: a real local Ray cluster of two nodes on this machine, started and stopped by
the tests (:class:`RayCluster`), for ``tests/sandbox/test_ray_backend.py`` and the benchmark.

The head (``--resources '{"head_node": 1}'``) and a second raylet (``--resources
'{"worker_node": 1}'``, label ``pi-test-node=worker``) each run as ``ray start --block`` in
their own session, with their own temporary directory and free ports, one CPU each, a small
object store and no dashboard. :meth:`RayCluster.kill_node` SIGKILLs a node's every process
(found by its temporary directory in ``/proc/*/cmdline`` and by process group), as a machine
lost mid-command; :meth:`RayCluster.stop` ends both nodes and every process they started, so
no process outlives the test session (``tests/conftest.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
"""The ``ray`` command of this virtual environment."""

OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""Each node's object store (Ray's minimum is 75 MiB)."""

SYSTEM_CONFIG = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 4,
    "health_check_timeout_ms": 500,
    "health_check_initial_delay_ms": 0,
}
"""The head's GCS notices a lost node within about two seconds (default: about 30)."""


def free_port() -> int:
    """A TCP port nobody listens on now (on 127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ray_environment() -> dict[str, str]:
    """The environment of ``ray start``: no usage statistics, no outside traffic, no
    ``RAY_ADDRESS`` of the caller."""
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.update(
        RAY_USAGE_STATS_ENABLED="0",
        RAY_DISABLE_DOCKER_CPU_WARNING="1",
        RAY_ENABLE_UV_RUN_RUNTIME_ENV="0",
        PYTHONWARNINGS="ignore",
    )
    return env


@dataclass
class RayNode:
    """One ``ray start --block`` process: its ``name``, temporary directory and resources."""

    name: str
    temp_dir: str
    resources: dict[str, float]
    process: subprocess.Popen[bytes]
    log: Path
    node_id: str = ""

    def pids(self) -> list[int]:
        """Every living process of this node: the ``ray start`` process, its process group, and
        any process whose command line or working directory names the node's directory."""
        found: set[int] = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            try:
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    if handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                        continue
            except (OSError, IndexError):
                continue
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == self.process.pid:
                    found.add(pid)
                    continue
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if self.temp_dir.encode() in handle.read():
                        found.add(pid)
                        continue
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    if f"PI_TEST_RAY_NODE={self.temp_dir}".encode() in handle.read():
                        found.add(pid)
        found.discard(os.getpid())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process of the node (again until none is left, at most 5 s)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)


@dataclass
class RayCluster:
    """A two-node local Ray cluster under ``base`` (see the module docstring)."""

    base: Path
    address: str = ""
    nodes: dict[str, RayNode] = field(default_factory=dict)
    head_resources: dict[str, float] = field(default_factory=lambda: {"head_node": 1})
    worker_resources: dict[str, float] = field(default_factory=lambda: {"worker_node": 1})

    def start(self, timeout: float = 90, workers: int = 1) -> RayCluster:
        """Start the head and ``workers`` worker nodes (:meth:`add_worker`; 0 or 1) and wait
        until they are alive; a node that fails to start stops the others (nothing is left)."""
        try:
            self._start(timeout, workers)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float, workers: int) -> None:
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self._start_node(
            "head",
            self.head_resources,
            [
                "--head",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                f"--port={port}",
                f"--system-config={json.dumps(SYSTEM_CONFIG)}",
            ],
        )
        self._wait_for_nodes(1, timeout)
        if workers:
            self.add_worker(timeout)

    def add_worker(self, timeout: float = 90) -> None:
        """Start the worker node (``worker_resources``, label ``pi-test-node=worker``) and wait
        until it is alive."""
        self._start_node(
            "worker",
            self.worker_resources,
            [f"--address={self.address}", "--labels=pi-test-node=worker"],
        )
        self._wait_for_nodes(2, timeout)

    def _start_node(self, name: str, resources: dict[str, float], extra: list[str]) -> None:
        temp_dir = tempfile.mkdtemp(prefix=f"pi-ray-{name}-", dir="/tmp")
        log = self.base / f"ray-{name}.log"
        env = ray_environment()
        env["PI_TEST_RAY_NODE"] = temp_dir
        args = [
            RAY,
            "start",
            "--block",
            "--disable-usage-stats",
            "--num-cpus=1",
            "--num-gpus=0",
            f"--resources={json.dumps(resources)}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            f"--temp-dir={temp_dir}",
            "--node-ip-address=127.0.0.1",
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            *extra,
        ]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.nodes[name] = RayNode(name, temp_dir, resources, process, log)

    def alive_nodes(self) -> list[dict[str, object]]:
        """``ray.nodes()`` of the living nodes, read by a separate Python process (so the test
        process never connects as a driver to the cluster it checks)."""
        code = (
            f"import json, ray; ray.init(address={self.address!r}, logging_level='ERROR', "
            "log_to_driver=False); print(json.dumps([{'id': n['NodeID'], "
            "'resources': n['Resources'], 'alive': n['Alive']} for n in ray.nodes()]))"
        )
        try:
            result = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=30,
                env=ray_environment(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return []
        if result.returncode != 0:
            return []
        nodes: list[dict[str, object]] = json.loads(result.stdout.strip().splitlines()[-1])
        return [n for n in nodes if n["alive"]]

    def _wait_for_nodes(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.process.poll() is not None:
                    raise RuntimeError(f"ray start {node.name} exited:\n{node.log.read_text()}")
            alive = self.alive_nodes()
            if len(alive) >= count:
                for node in self.nodes.values():
                    for found in alive:
                        resources = found["resources"]
                        assert isinstance(resources, dict)
                        if all(k in resources for k in node.resources):
                            node.node_id = str(found["id"])
                return
            time.sleep(0.5)
        logs = "\n".join(n.log.read_text() for n in self.nodes.values())
        raise RuntimeError(f"the Ray cluster did not start in {timeout} s:\n{logs}")

    def kill_node(self, name: str) -> None:
        """SIGKILL every process of node ``name`` (a machine lost)."""
        self.nodes[name].kill()

    def stop(self) -> None:
        """End every process of both nodes: SIGTERM to ``ray start --block`` (which stops its
        node), then SIGKILL whatever is left; remove the temporary directories."""
        for node in reversed(list(self.nodes.values())):
            if node.process.poll() is None:
                with contextlib.suppress(OSError):
                    node.process.send_signal(signal.SIGTERM)
        for node in reversed(list(self.nodes.values())):
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(timeout=15)
            node.kill()
        for node in self.nodes.values():
            subprocess.run(["rm", "-rf", node.temp_dir], check=False)


__all__ = ["RAY", "RayCluster", "RayNode", "free_port", "ray_environment"]
