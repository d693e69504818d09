"""The sandbox plugin keeps what it builds for a session in the session's ``state`` and
releases it in ``pi_session_end``: the SSH control master is stopped and its socket directory
removed; a container started from an image is removed. No module-level cache, no ``atexit``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio
from container_support import container_names
from replay_support import call

import pi_builtin_tools.plugin as builtin_plugin
import pi_sandbox_plugin.plugin as sandbox_plugin
from pi_core._plugins.manager import PiPluginManager
from pi_core._plugins.session import Session, build_session
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.ssh import SshBashOperations
from pi_sandbox_plugin.backends.wiring import SandboxSession
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations

SANDBOX_SRC = Path(sandbox_plugin.__file__).parent


def session_of(ws: Path, config: dict[str, Any]) -> Session:
    pm = PiPluginManager()
    pm.register(builtin_plugin, name="builtin_tools")
    pm.register(sandbox_plugin, name="sandbox")
    return build_session(pm, ws, config, host="call")


def masters(control_path: str) -> list[int]:
    """Local processes whose command line names ``control_path`` (the ssh control master)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if control_path.encode() in f.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


def test_no_atexit_and_no_module_level_session_cache() -> None:
    for path in SANDBOX_SRC.rglob("*.py"):
        assert "atexit" not in path.read_text(encoding="utf-8"), path
    import pi_sandbox_plugin.backends.wiring as backends

    assert not hasattr(backends, "_SESSIONS")


async def test_the_backends_live_in_the_session_state(tmp_path: Path) -> None:
    config = {"sandbox": {"policy": {"deny_paths": [".env"]}}}
    session = session_of(tmp_path, config)
    assert session.context is not None
    (kept,) = session.context.state["sandbox"]
    assert isinstance(kept, SandboxSession) and kept.files is session.file_operations
    assert isinstance(session.file_operations, GuardedFileOperations)
    async with session:
        pass
    assert "sandbox" not in session.context.state


async def test_ssh_session_end_stops_the_master_and_removes_its_socket(
    tmp_path: Path, ssh_server: Any
) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    local = tmp_path / "local"
    local.mkdir()
    conn = ssh_server.connection()
    config = {
        "sandbox": {
            "backend": "ssh",
            "ssh": {
                "host": conn.host,
                "port": conn.port,
                "user": conn.user,
                "identity_file": conn.identity_file,
                "remote_cwd": str(remote),
                "options": list(conn.options),
            },
        }
    }
    session = session_of(local, config)
    bash = session.bash_operations
    assert isinstance(bash, SshBashOperations)
    connection = bash.connection
    async with session:
        assert await call(session, "bash", command="pwd") == (f"{remote}\n", False)
        control_path = connection.control_path
        socket_dir = os.path.dirname(control_path)
        assert await trio.Path(control_path).exists()
        assert masters(control_path) != []
    assert session.context is not None and session.context.reason == "completed"
    assert not await trio.Path(socket_dir).exists()
    assert masters(control_path) == []
    await connection.aclose()  # a second close is harmless


async def test_container_session_end_removes_the_container_it_started(
    tmp_path: Path, podman: Any
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    image = podman.image()
    config = {
        "sandbox": {
            "backend": "container",
            "container": {
                "cli": podman.cli,
                "image": image,
                "workdir": "/work",
                "cli_args": podman.cli_args,
                "run_args": podman.run_args,
            },
        }
    }
    session = session_of(ws, config)
    backend = session.bash_operations
    container = getattr(backend, "inner", None)
    assert isinstance(container, ContainerBackend)
    try:
        async with session:
            assert await call(session, "bash", command="pwd") == ("/work\n", False)
            assert container.container in container_names(podman.cli, podman.cli_args)
        assert container.container not in container_names(podman.cli, podman.cli_args)
    finally:
        await container.aclose()
