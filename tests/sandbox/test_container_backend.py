"""The container backend against real podman (runc) and an image built here without any
registry (``container_support``): the BashOperations contract suite, the file operations inside
the container, and the lifecycle of a container started from an image."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import trio
from container_support import PodmanSession, container_names
from head_read_support import (
    HEAD_NAMES,
    HEAD_SIZE,
    WHOLE_LIMIT,
    CountingProgram,
    local_heads,
    make_head_files,
    summary,
)

from pi_builtin_tools.files.read import read_file
from pi_builtin_tools.files.write import write_file
from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._errors import ToolError
from pi_core.testing.bash_contract import BashOperationsContract, Recorder
from pi_core.testing.file_contract import FileOperationsContract, FileShell
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.ssh import RemotePathMap
from pi_sandbox_plugin.backends.wiring import MappedFileOperations
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations
from pi_sandbox_plugin.policies.path_policy import PathPolicy

pytestmark = pytest.mark.slow  # real podman containers


@pytest.fixture
def running(podman: PodmanSession) -> ContainerBackend:
    """A backend exec-ing into the session's running container (workspace at /work)."""
    return ContainerBackend(
        cli=podman.cli, cli_args=podman.cli_args, container=podman.container(), kill_grace=0.5
    )


@pytest.fixture
def workspace_dir(podman: PodmanSession, running: ContainerBackend) -> tuple[Path, str]:
    """A fresh directory of the mounted workspace: (host path, container path)."""
    name = os.urandom(6).hex()
    host = Path(podman.workspace) / name
    host.mkdir()
    return host, f"/work/{name}"


class TestContainerContract(BashOperationsContract):
    @pytest.fixture
    def bash_operations(self, running: ContainerBackend) -> BashOperations:
        return running

    @pytest.fixture
    def bash_workdir(self, workspace_dir: tuple[Path, str]) -> str:
        return workspace_dir[1]


class TestContainerFileContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self, running: ContainerBackend) -> FileOperations:
        return running

    @pytest.fixture
    def file_root(self, workspace_dir: tuple[Path, str]) -> str:
        return workspace_dir[1]

    @pytest.fixture
    def file_shell(self, running: ContainerBackend) -> FileShell:
        async def run(script: str, cwd: str) -> bytes:
            command = [running.cli, *running.cli_args, "exec", "-w", cwd, running.container]
            result = await trio.run_process(
                [*command, "sh", "-c", script],
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            assert result.returncode == 0, (script, result.stderr)
            return bytes(result.stdout)

        return run


async def run(
    ops: ContainerBackend, command: str, cwd: str, **kwargs: object
) -> tuple[int | None, bytes]:
    recorder = Recorder()
    with trio.fail_after(30):
        code = await ops.exec(command, cwd, on_data=recorder, **kwargs)  # type: ignore[arg-type]
    return code, recorder.data


async def test_files_are_the_containers(
    running: ContainerBackend, workspace_dir: tuple[Path, str]
) -> None:
    host, inside = workspace_dir
    await running.write_bytes(f"{inside}/made-inside.txt", b"inside\n")
    assert (host / "made-inside.txt").read_bytes() == b"inside\n"
    assert await run(running, "cat /etc/passwd; ls /", inside) == (
        0,
        b"root:x:0:0:root:/root:/bin/bash\n"
        b"bin\ndev\netc\nlib\nlib64\nproc\nroot\nrun\nsbin\nsys\ntmp\nusr\nvar\nwork\n",
    )
    result = await write_file("note.txt", "hello", inside, running)
    assert result.content[0].text == "Successfully wrote to note.txt"  # type: ignore[union-attr]
    assert (host / "note.txt").read_text() == "hello"


async def test_env_is_added_and_cwd_is_used(
    running: ContainerBackend, workspace_dir: tuple[Path, str]
) -> None:
    _, inside = workspace_dir
    code, out = await run(running, 'echo "$PWD [$GREETING]"', inside, env={"GREETING": "hi x=1"})
    assert (code, out) == (0, f"{inside} [hi x=1]\n".encode())


async def test_container_started_from_an_image_is_removed_at_the_end(
    podman: PodmanSession, tmp_path: Path
) -> None:
    image = podman.image()
    (tmp_path / "seed.txt").write_text("from host\n")
    backend = ContainerBackend(
        cli=podman.cli,
        cli_args=podman.cli_args,
        run_args=podman.run_args,
        image=image,
        workspace=str(tmp_path),
        workdir="/project",
        kill_grace=0.5,
    )
    name = backend.container
    assert name.startswith("pi-sandbox-")
    async with backend:
        assert name in container_names(podman.cli, podman.cli_args)
        assert await run(backend, "cat seed.txt; pwd; echo out > made.txt", "/project") == (
            0,
            b"from host\n/project\n",
        )
        assert backend.container_path(str(tmp_path / "made.txt")) == "/project/made.txt"
        assert await backend.read_bytes("/project/made.txt") == b"out\n"
        assert (tmp_path / "made.txt").read_text() == "out\n"
    assert name not in container_names(podman.cli, podman.cli_args)
    with pytest.raises(SandboxUnavailable) as info:
        await run(backend, "echo again", "/project")
    assert str(info.value) == "the container sandbox is closed"
    assert name not in container_names(podman.cli, podman.cli_args)


async def test_image_container_is_removed_when_the_body_fails(
    podman: PodmanSession, tmp_path: Path
) -> None:
    backend = ContainerBackend(
        cli=podman.cli,
        cli_args=podman.cli_args,
        run_args=podman.run_args,
        image=podman.image(),
        workspace=str(tmp_path),
    )
    with pytest.raises(RuntimeError, match="body failed"):
        async with backend:
            assert await run(backend, "echo up", "/work") == (0, b"up\n")
            raise RuntimeError("body failed")
    assert backend.container not in container_names(podman.cli, podman.cli_args)


async def test_started_lazily_by_the_first_call(podman: PodmanSession, tmp_path: Path) -> None:
    backend = ContainerBackend(
        cli=podman.cli,
        cli_args=podman.cli_args,
        run_args=podman.run_args,
        image=podman.image(),
        workspace=str(tmp_path),
    )
    try:
        assert await backend.list_dir("/work") == []
        assert backend.container in container_names(podman.cli, podman.cli_args)
    finally:
        await backend.aclose()
    assert backend.container not in container_names(podman.cli, podman.cli_args)


async def test_missing_container_fails_every_call(podman: PodmanSession, tmp_path: Path) -> None:
    backend = ContainerBackend(cli=podman.cli, cli_args=podman.cli_args, container="pi-no-such")
    expected = (
        'podman exec failed: Error: no container with name or ID "pi-no-such" found: '
        "no such container"
    )
    with pytest.raises(SandboxUnavailable) as info:
        await run(backend, "echo never", "/")
    assert str(info.value) == expected
    with pytest.raises(SandboxUnavailable) as info:
        await backend.read_bytes("/etc/passwd")
    assert str(info.value) == expected


async def test_missing_cli_fails_every_call() -> None:
    backend = ContainerBackend(cli="/nonexistent/podman", container="box")
    expected = "/nonexistent/podman is not installed: the container sandbox cannot run"
    for call in (run(backend, "echo never", "/"), backend.stat("/")):
        with pytest.raises(SandboxUnavailable) as info:
            await call
        assert str(info.value) == expected


async def test_image_that_cannot_start(podman: PodmanSession, tmp_path: Path) -> None:
    backend = ContainerBackend(
        cli=podman.cli,
        cli_args=podman.cli_args,
        image="localhost/pi-no-such-image:none",
        workspace=str(tmp_path),
        run_args=["--pull", "never", *podman.run_args],
    )
    with pytest.raises(SandboxUnavailable) as info:
        await run(backend, "echo never", "/work")
    assert str(info.value).startswith("podman run localhost/pi-no-such-image:none failed: Error:")
    assert backend.container not in container_names(podman.cli, podman.cli_args)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="exactly one of container"):
        ContainerBackend(container="a", image="b", workspace="/w")
    with pytest.raises(ValueError, match="exactly one of container"):
        ContainerBackend()
    with pytest.raises(ValueError, match="needs the workspace"):
        ContainerBackend(image="b")


async def test_missing_cwd_text(running: ContainerBackend) -> None:
    with pytest.raises(ToolError) as info:
        await run(running, "echo never", "/work/nope")
    assert str(info.value) == (
        "Working directory does not exist: /work/nope\nCannot execute bash commands."
    )


async def test_read_is_one_exec_with_the_local_results(
    podman: PodmanSession, workspace_dir: tuple[Path, str], tmp_path: Path
) -> None:
    """The read tool's first step (resolve the name, stat, read the start) is one ``exec`` of
    one script, with what the local backend gives for the same (mounted) files; through a path
    guard that lets every path be read, a whole read of a small file is that one ``exec`` too
    (a guard that restricts reads judges the resolved path before any file is opened)."""
    host, inside = workspace_dir
    make_head_files(host)
    expected = await local_heads(host)
    cli = CountingProgram(tmp_path, "podman")
    backend = ContainerBackend(
        cli=cli.path, cli_args=podman.cli_args, container=podman.container(), kill_grace=0.5
    )
    files = MappedFileOperations(backend, RemotePathMap(str(host), inside))
    await files.stat(str(host))  # the container is checked
    got, execs = [], []
    for name in HEAD_NAMES:
        before = cli.calls()
        head = await files.read_head(name, str(host), whole_limit=WHOLE_LIMIT, head_size=HEAD_SIZE)
        execs.append(cli.calls() - before)
        got.append(summary(head, str(host)))
    assert got == expected
    assert execs == [1] * len(HEAD_NAMES)
    calls = []
    for policy in (PathPolicy(str(host), read_roots=["/"]), PathPolicy(str(host))):
        before = cli.calls()
        result = await read_file("link", str(host), GuardedFileOperations(files, policy))
        calls.append((result.content[0].text, cli.calls() - before))
    assert calls == [("hello\nworld\n", 1), ("hello\nworld\n", 4)]
