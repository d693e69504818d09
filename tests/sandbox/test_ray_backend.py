"""The Ray backend (issue 16) on a real local Ray cluster of two nodes started by these tests
(``ray_support.RayCluster``: a head offering ``head_node`` and a second raylet offering
``worker_node``, label ``pi-test-node=worker``; one CPU each; stopped at the end of the module).

* ``pi call bash`` through the Ray backend runs on the node its placement names: the
  ``PI_RAY_NODE_ID`` it prints is that node's id in ``ray.nodes()``;
* the bash and file contract suites pass against :class:`RayBackend` (one actor on the worker
  node, paths as the node sees them);
* the 20-call parity session of ``test_backend_parity`` gives the same results as local, the
  session cwd shipped to the node;
* the actor is released when the session ends (its process ends, a new workspace is removed);
* a missing ``ray`` is a one-line error naming the extra;
* a worker node killed mid-command gives an error result naming the node within the timeout.

Without ``ray`` the tests skip with the reason (fail under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from ray_support import RayCluster, ray_environment
from replay_support import PI, texts, tool_call
from test_backend_parity import EXPECTED, SESSION, make_files, replay_on

from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core.testing.bash_contract import BashOperationsContract, Recorder
from pi_core.testing.file_contract import FileOperationsContract, FileShell

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]
"""One test process (``pytest -n``) runs this module: one cluster, started once."""


def _require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        reason = f"ray is not installed ({exc}): pip install 'pi-sandbox-plugin[ray]'"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install it")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """The module's two-node cluster; this process joins it as a driver on first use and
    leaves it before the nodes stop."""
    _require_ray()
    cluster = RayCluster(tmp_path_factory.mktemp("ray")).start()
    try:
        yield cluster
    finally:
        import ray

        ray.shutdown()
        cluster.stop()


@pytest.fixture(scope="module")
def node_ids(ray_cluster: RayCluster) -> dict[str, str]:
    """Node name (``head``, ``worker``) → its id, as ``ray.nodes()`` reports it."""
    by_resource = {}
    for node in ray_cluster.alive_nodes():
        resources = node["resources"]
        assert isinstance(resources, dict)
        for name in ("head", "worker"):
            if f"{name}_node" in resources:
                by_resource[name] = str(node["id"])
    assert sorted(by_resource) == ["head", "worker"]
    return by_resource


def pi_toml(path: Path, address: str, **ray: Any) -> Path:
    """Write a config choosing the Ray backend at ``address`` with the ``[sandbox.ray]`` keys
    ``ray`` (values as TOML inline values)."""
    lines = ["[sandbox]", 'backend = "ray"', "[sandbox.ray]", f'address = "{address}"']
    lines += [f"{key} = {value}" for key, value in ray.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def pi_call(config: Path, cwd: Path, command: str, *options: str, timeout: float = 120) -> Any:
    """``pi --config CONFIG call bash {"command": COMMAND} --json`` in ``cwd``."""
    return subprocess.run(
        [PI, "--config", str(config), "call", "bash", json.dumps({"command": command}), *options],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ray_environment(),
        check=False,
    )


# -- placement ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placement", "node"),
    [
        ({"resources": "{worker_node = 0.1}"}, "worker"),
        ({"resources": "{head_node = 0.1}"}, "head"),
        ({"labels": '{"pi-test-node" = "worker"}'}, "worker"),
    ],
)
def test_pi_call_bash_runs_on_the_node_its_placement_names(
    ray_cluster: RayCluster,
    node_ids: dict[str, str],
    tmp_path: Path,
    placement: dict[str, str],
    node: str,
) -> None:
    config = pi_toml(tmp_path / "pi.toml", ray_cluster.address, **placement)
    result = pi_call(config, tmp_path, 'echo "node=$PI_RAY_NODE_ID"')
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"node={node_ids[node]}\n",
        "",
    )


def test_a_resource_no_node_offers_is_an_error_result_at_once(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    config = pi_toml(tmp_path / "pi.toml", ray_cluster.address, resources="{gpu_box = 1}")
    result = pi_call(config, tmp_path, "echo never", "--json")
    message = json.loads(result.stdout)
    text = message["content"][0]["text"]
    assert (result.returncode, message["isError"]) == (1, True)
    assert text.startswith(
        f"no node of the Ray cluster at {ray_cluster.address} offers the resource gpu_box "
        "(it has: CPU, "
    ), text


def test_the_actor_is_released_when_the_session_ends(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    config = pi_toml(tmp_path / "pi.toml", ray_cluster.address, resources="{worker_node = 0.1}")
    # $PPID is the supervisor; its parent is the actor's process on the node
    result = pi_call(config, tmp_path, 'pwd; ps -o ppid= -p "$PPID" | tr -d " "')
    assert (result.returncode, result.stderr) == (0, ""), result.stdout
    workspace, actor_pid = result.stdout.split()
    assert workspace.startswith("/tmp/pi-ray-")
    assert not os.path.exists(workspace)  # a new workspace is removed with the actor
    deadline = time.monotonic() + 15
    while os.path.exists(f"/proc/{actor_pid}") and time.monotonic() < deadline:
        with open(f"/proc/{actor_pid}/stat", "rb") as handle:
            if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
        time.sleep(0.1)
    alive = os.path.exists(f"/proc/{actor_pid}/cmdline")
    if alive:
        with open(f"/proc/{actor_pid}/cmdline", "rb") as handle:
            alive = bool(handle.read())
    assert not alive, f"the actor's process {actor_pid} still runs"


def test_a_missing_ray_is_an_error_naming_the_extra(tmp_path: Path) -> None:
    config = pi_toml(tmp_path / "pi.toml", "127.0.0.1:1")
    code = (
        "import sys; sys.modules['ray'] = None; from _pi_entry import main; "
        "sys.argv = ['pi'] + sys.argv[1:]; sys.exit(main())"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--config",
            str(config),
            "call",
            "bash",
            '{"command": "true"}',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout == ""
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "pi.toml: sandbox.backend: the Ray backend needs the ray package, which cannot be "
            "imported (import of ray halted; None in sys.modules): "
            "pip install 'pi-sandbox-plugin[ray]'"
        )
    ), result.stderr
    assert result.returncode != 0


# -- the contract suites ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def worker_backend(
    ray_cluster: RayCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One :class:`RayBackend` (an actor on the worker node) shared by the contract tests;
    paths are the node's (no session cwd to map)."""
    from pi_sandbox_plugin.backends.ray import RayBackend

    backend = RayBackend(
        address=ray_cluster.address,
        workspace=str(tmp_path_factory.mktemp("ray-contract-ws")),
        resources={"worker_node": 0.1},
        kill_grace=0.5,
        lost_after=5,
        start_timeout=60,
    )
    trio.run(backend.start)
    yield backend
    trio.run(backend.aclose)


@pytest.fixture
def node_dir(worker_backend: Any) -> str:
    """A new directory in the actor's workspace (made on the node)."""
    path = f"{worker_backend.workspace}/{secrets.token_hex(6)}"
    os.makedirs(path)  # the worker node is this machine
    return path


class TestRayBashContract(BashOperationsContract):
    @pytest.fixture
    def bash_operations(self, worker_backend: Any) -> BashOperations:
        backend: BashOperations = worker_backend
        return backend

    @pytest.fixture
    def bash_workdir(self, node_dir: str) -> str:
        return node_dir


class TestRayFileContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self, worker_backend: Any) -> FileOperations:
        backend: FileOperations = worker_backend
        return backend

    @pytest.fixture
    def file_root(self, node_dir: str) -> str:
        return node_dir

    @pytest.fixture
    def file_shell(self, worker_backend: Any) -> FileShell:
        async def run(script: str, cwd: str) -> bytes:
            recorder = Recorder()
            code = await worker_backend.exec(script, cwd, on_data=recorder, timeout=30)
            assert code == 0, (script, recorder.data)
            return recorder.data

        return run


async def test_commands_see_the_node_id_and_only_pis_variables(
    worker_backend: Any, node_ids: dict[str, str], node_dir: str
) -> None:
    recorder = Recorder()
    env = {**os.environ, "PI_SESSION_VAR": "sent", "LOCAL_SECRET": "kept here"}
    os.environ["LOCAL_SECRET"] = "kept here"
    try:
        code = await worker_backend.exec(
            'echo "$PI_RAY_NODE_ID [$PI_SESSION_VAR] [${LOCAL_SECRET-unset}]"',
            node_dir,
            on_data=recorder,
            env=env,
        )
    finally:
        del os.environ["LOCAL_SECRET"]
    assert (code, recorder.data) == (0, f"{node_ids['worker']} [sent] [unset]\n".encode())


async def test_output_streams_back_while_the_command_runs(
    worker_backend: Any, node_dir: str
) -> None:
    recorder = Recorder()
    start = trio.current_time()
    code = await worker_backend.exec(
        "echo one; sleep 1; echo two", node_dir, on_data=recorder, timeout=20
    )
    assert (code, recorder.data) == (0, b"one\ntwo\n")
    assert recorder.times[0] - start < 0.8  # "one" arrived before the command ended


# -- the parity session ------------------------------------------------------------------------


def test_the_parity_session_gives_the_same_results_as_local(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    make_files(local)
    expected = replay_on('[sandbox]\nbackend = "local"\n', local, tmp_path, [str(local)])

    session_cwd, node_workspace = tmp_path / "ray-session", tmp_path / "ray-node-ws"
    make_files(session_cwd)
    ray_config = (
        f'[sandbox]\nbackend = "ray"\n[sandbox.ray]\naddress = "{ray_cluster.address}"\n'
        f'resources = {{worker_node = 0.1}}\nworkspace = "{node_workspace}"\nship = "cwd"\n'
    )
    results = replay_on(ray_config, session_cwd, tmp_path, [str(session_cwd), str(node_workspace)])
    assert texts(results) == texts(expected) == EXPECTED
    assert results == expected
    # every call ran on the node's workspace; the shipped session cwd is untouched
    assert (node_workspace / "a.txt").read_text() == "bye\nworld\nfoo\n"
    assert (node_workspace / "sub" / "new.txt").read_text() == "made\nhere\n"
    assert (session_cwd / "a.txt").read_text() == "hello\nworld\nfoo\n"
    assert sorted(os.listdir(session_cwd)) == ["a.txt", "sub"]


# -- many sessions: pi replay --parallel ---------------------------------------------------------


def test_sessions_replayed_in_parallel_give_the_same_results_as_sequential(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    session_cwd = tmp_path / "session"
    make_files(session_cwd)
    files = []
    for index in range(3):
        file = tmp_path / f"s{index}.jsonl"
        messages = [*SESSION, [tool_call("own", "bash", command=f"echo file-{index}; cat a.txt")]]
        file.write_text(
            "".join(
                json.dumps({"role": "assistant", "content": m, "stopReason": "toolUse"}) + "\n"
                for m in messages
            )
        )
        files.append(str(file))
    # no placement: the sessions' actors go to either node; each ships the cwd to its own
    # new workspace
    config = pi_toml(tmp_path / "pi.toml", ray_cluster.address, ship='"cwd"')
    runs = {}
    for parallel in ("1", "3"):
        replay = ["replay", "--sequential", "--parallel", parallel, *files, "--json"]
        result = subprocess.run(
            [PI, "--config", str(config), *replay],
            cwd=session_cwd,
            capture_output=True,
            text=True,
            timeout=300,
            env=ray_environment(),
            check=False,
        )
        assert (result.returncode, result.stderr) == (0, ""), result.stdout
        text = re.sub(r"/tmp/pi-ray-[A-Za-z0-9_]+", "<ws>", result.stdout)
        text = text.replace(str(session_cwd), "<ws>")
        lines = [json.loads(line) for line in text.splitlines()]
        for line in lines:
            line.pop("seconds")
            for message in line["results"]:
                message.pop("timestamp")
        runs[parallel] = lines
    assert runs["3"] == runs["1"]
    for index, line in enumerate(runs["3"]):
        assert (line["file"], line["status"], line["calls"]) == (files[index], "ok", 25)
        assert texts(line["results"]) == {
            **EXPECTED,
            "own": (f"file-{index}\nbye\nworld\nfoo\n", False),
        }
    assert (session_cwd / "a.txt").read_text() == "hello\nworld\nfoo\n"  # never written


# -- a node lost mid-command (last: it kills the worker node) -------------------------------------


def test_a_worker_node_killed_mid_command_is_an_error_result_within_the_timeout(
    ray_cluster: RayCluster, node_ids: dict[str, str], tmp_path: Path
) -> None:
    started = tmp_path / "started"
    config = pi_toml(
        tmp_path / "pi.toml",
        ray_cluster.address,
        resources="{worker_node = 0.1}",
        lost_after=3,
        workspace=json.dumps(str(tmp_path / "node-ws")),
    )
    command = json.dumps({"command": f"touch {started}; sleep 100", "timeout": 30})
    process = subprocess.Popen(
        [PI, "--config", str(config), "call", "bash", command, "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ray_environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        killed_at = time.monotonic()
        ray_cluster.kill_node("worker")
        stdout, stderr = process.communicate(timeout=60)
        elapsed = time.monotonic() - killed_at
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    message = json.loads(stdout)
    text = message["content"][0]["text"]
    assert (process.returncode, message["isError"], stderr) == (1, True, "")
    assert re.fullmatch(
        rf"the Ray node {node_ids['worker']} \([0-9.]+\) or the actor pi-session-[0-9a-f]{{12}} "
        r"of this session is lost: .+",
        text,
    ), text
    assert elapsed < 30, elapsed  # within the command's timeout


def test_an_unreachable_address_is_an_error_result_at_once(tmp_path: Path) -> None:
    """``ray.init`` retries an address nothing listens on without end: pi checks first."""
    _require_ray()
    (tmp_path / "pi.toml").write_text(
        '[sandbox]\nbackend = "ray"\n[sandbox.ray]\naddress = "127.0.0.1:1"\n'
    )
    proc = subprocess.run(  # a hang fails the test at the timeout
        [str(PI), "call", "bash", '{"command": "echo hi"}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (proc.returncode, proc.stdout) == (
        1,
        "cannot connect to the Ray cluster at 127.0.0.1:1: Connection refused\n",
    )
