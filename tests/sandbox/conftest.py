"""Fixtures of the sandbox backend tests. Each backend keeps its fixtures in its own section."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from container_support import PodmanSession
from sshd_support import SshServer, start_sshd

# ==== SSH backend (tests/sandbox/test_ssh_backend.py) ==========================================


class SshdPool:
    """Starts test ``sshd`` servers on demand: one shared by the session, and fresh ones that a
    test may kill (stopped at the end of that test)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.shared_server: SshServer | None = None
        self.started: list[SshServer] = []
        self.count = 0

    def start(self, require_program: Callable[[str], str]) -> SshServer:
        require_program("ssh")
        keygen = require_program("ssh-keygen")
        sshd = require_program(shutil.which("sshd") or "/usr/sbin/sshd")
        self.count += 1
        server = start_sshd(sshd, keygen, self.base / f"sshd{self.count}")
        self.started.append(server)
        return server

    def shared(self, require_program: Callable[[str], str]) -> SshServer:
        if self.shared_server is None:
            self.shared_server = self.start(require_program)
        return self.shared_server

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()
        self.started.clear()
        self.shared_server = None


@pytest.fixture(scope="session")
def sshd_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdPool]:
    pool = SshdPool(tmp_path_factory.mktemp("sshd"))
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
def ssh_server(sshd_pool: SshdPool, require_program: Callable[[str], str]) -> SshServer:
    """The session's shared test ``sshd`` (skips, or fails under CI, without OpenSSH)."""
    return sshd_pool.shared(require_program)


@pytest.fixture
def fresh_ssh_server(
    sshd_pool: SshdPool, require_program: Callable[[str], str]
) -> Iterator[SshServer]:
    """A test ``sshd`` of this test alone (it may kill it); stopped after the test."""
    server = sshd_pool.start(require_program)
    try:
        yield server
    finally:
        server.stop()
        sshd_pool.started.remove(server)


# ==== end of SSH backend ========================================================================


# ==== bwrap backend ============================================================================


@pytest.fixture
def bwrap_ok(require_program: Callable[[str], str], tmp_path: Path) -> None:
    """Skip (fail under CI) unless bubblewrap is installed and can create its sandbox here."""
    from pi_sandbox_plugin.backends.bwrap import BwrapBackend

    require_program("bwrap")
    probe = [*BwrapBackend(str(tmp_path)).sandbox_args(), "--", "/bin/bash", "-c", ":"]
    result = subprocess.run(probe, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"bwrap cannot create its sandbox here: {result.stderr.strip()}")
        pytest.skip(f"bwrap cannot create its sandbox here: {result.stderr.strip()}")


# ==== end of bwrap backend ======================================================================

# ==== container backend (container_support.py) =================================================


@pytest.fixture(scope="session")
def podman_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PodmanSession]:
    """The session's image and container, made on first use, removed at the end."""
    scratch = tmp_path_factory.mktemp("podman")
    workspace = tmp_path_factory.mktemp("container-ws")
    session = PodmanSession(str(scratch), str(workspace))
    yield session
    session.cleanup()


@pytest.fixture
def podman(require_program: Callable[[str], str], podman_session: PodmanSession) -> PodmanSession:
    """The session's podman, after checking the components (skip, or fail under CI)."""
    require_program("podman")
    require_program("runc")
    return podman_session


# ==== end of container backend ==================================================================
