"""A real OpenSSH server for the SSH backend tests.

:func:`start_sshd` starts ``sshd -D -e -f CONFIG`` on 127.0.0.1 on a free port, as the current
user, with a generated host key and user key (``ssh-keygen``) and a ``known_hosts`` file in a
private directory; :meth:`SshServer.connection` gives an
:class:`~pi_sandbox_plugin.backends.ssh.SshConnection` to it. :meth:`SshServer.stop` kills the
listener and every process it started (per-connection ``sshd`` processes and the sessions'
processes, found through ``/proc``), so nothing outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_sandbox_plugin.backends.ssh import SshConnection
from support import descendants


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(ssh_keygen: str, path: Path) -> None:
    subprocess.run(
        [ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-C", "pi-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@dataclass
class SshServer:
    """A running test ``sshd`` (see the module docstring)."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path
    user_key: Path
    known_hosts: Path
    log: Path
    connections: list[SshConnection] = field(default_factory=list)

    def connection(self, **overrides: Any) -> SshConnection:
        """A new connection to this server (closed by :meth:`stop` at the latest)."""
        settings: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": os.environ.get("USER") or _user_name(),
            "identity_file": str(self.user_key),
            "options": [
                f"UserKnownHostsFile={self.known_hosts}",
                "StrictHostKeyChecking=yes",
                "GlobalKnownHostsFile=/dev/null",
            ],
        }
        settings.update(overrides)
        connection = SshConnection(**settings)
        self.connections.append(connection)
        return connection

    def sshd_processes(self) -> list[int]:
        """The listener and its per-connection ``sshd`` processes (not the sessions' own)."""
        found = [self.process.pid]
        for pid in descendants(self.process.pid):
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().startswith(b"sshd"):
                        found.append(pid)
        return found

    def stop(self) -> None:
        """Close the connections, then SIGKILL sshd and everything below it."""
        for connection in self.connections:
            connection.close()
        pids = [self.process.pid, *descendants(self.process.pid)]
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()


def _user_name() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def start_sshd(sshd: str, ssh_keygen: str, directory: Path) -> SshServer:
    """Start ``sshd`` (absolute path) on a free port of 127.0.0.1 and wait until it accepts."""
    directory.mkdir(parents=True, exist_ok=True)
    host_key, user_key = directory / "host_key", directory / "user_key"
    _keygen(ssh_keygen, host_key)
    _keygen(ssh_keygen, user_key)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    port = _free_port()
    # The sessions' HOME is a folder of this server's own: the machine's dotfiles (bash reads
    # ~/.bashrc under sshd) do not run in the tests' sessions. A shell-init hook that writes to
    # stderr (pyenv's rehash, racing between concurrent sessions: "pyenv: cannot rehash")
    # would otherwise land in output the tests compare exactly.
    home = directory / "home"
    home.mkdir(exist_ok=True)
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {host_key}\n"
        f"AuthorizedKeysFile {user_key}.pub\n"
        "PermitRootLogin yes\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PidFile none\n"
        "MaxSessions 100\n"
        "MaxStartups 100:30:200\n"
        "LogLevel ERROR\n"
        f"SetEnv HOME={home}\n"
    )
    host_public = (directory / "host_key.pub").read_text().split()
    known_hosts = directory / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_public[0]} {host_public[1]}\n")
    log = directory / "sshd.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = SshServer(process, port, directory, user_key, known_hosts, log)
    deadline = time.monotonic() + 10
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited with {process.returncode}: {log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return server
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"sshd did not listen on port {port}: {log.read_text()}")
        time.sleep(0.05)


__all__ = ["SshServer", "descendants", "start_sshd"]
