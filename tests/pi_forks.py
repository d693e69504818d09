"""``pi`` commands as forks of one process that has imported pi already (the conformance runs).

A ``pi replay`` of one case spends about 0.3 s of CPU importing pi (the command line, trio,
pydantic, the plugins) and about 0.02 s replaying the case; the conformance tests start it some
360 times. :class:`PiForks` starts one server per test process (this file run as a script): it
imports what the ``pi`` console script imports, then the modules of every ``pi`` entry point
(the plugins), and forks once per command. The child becomes the command as a new process
would be: the caller's stdin, stdout and stderr (passed over a Unix socket), working directory,
environment and argv, SIGINT back to Python's handler; it then runs ``pi``'s own ``main`` and
ends as the interpreter ends after the console script (``sys.exit`` of its status: an uncaught
exception printed with exit status 1, ``atexit`` handlers run, non-daemon threads joined,
the streams flushed).

What differs from a new process is only what was done before the fork: pi's modules were
imported once, with the environment the server was started with. The server is replaced when
a command comes with another environment (``PYTEST_CURRENT_TEST`` left out: no module of pi
reads it when it loads) or another ``pi``. ``PI_CONFORMANCE_PI_PER_CASE=1`` makes the
conformance tests run ``pi`` as a new process per case instead, as ``compare.py`` alone does.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

MAX_MESSAGE = 1 << 20
"""The largest request (argv, working directory, environment as JSON)."""


def _environment_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k != "PYTEST_CURRENT_TEST"))


class PiForks:
    """The fork server of one ``pi`` console script (see the module docstring)."""

    def __init__(self, pi: str, env: dict[str, str]) -> None:
        self.pi = pi
        self.key = _environment_key(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The server's own stdout and stderr are pipes, as its commands' are: Python's standard
        # streams, made at its start, remember what their file was (not seekable, not a
        # terminal), and a fork keeps them. What the server itself writes (a failure to start)
        # stays in the pipe, read by close().
        self.own_output, own_write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, str(theirs.fileno()), pi],
                stdin=subprocess.DEVNULL,
                stdout=own_write,
                stderr=own_write,
                pass_fds=(theirs.fileno(),),
                env=env,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            os.close(self.own_output)
            raise
        finally:
            theirs.close()
            os.close(own_write)
        os.set_blocking(self.own_output, False)
        self.sock = ours

    def _reply(self) -> dict[str, int] | None:
        """The server's next message (``{"pid"}`` once it forked, ``{"status"}`` once it reaped
        the command), or ``None`` when it has ended."""
        data = self.sock.recv(4096)
        if not data:
            return None
        reply: dict[str, int] = json.loads(data)
        return reply

    def run(
        self, argv: list[str], timeout: float, *, cwd: str, env: dict[str, str]
    ) -> tuple[int, bytes, bytes] | None:
        """``argv`` (``argv[0]`` is this server's ``pi``) as a new process with stdin from
        ``/dev/null``: its exit status (``-N`` when killed by signal N), stdout and stderr, as
        ``subprocess.run(..., capture_output=True)`` gives them. ``None`` when the server had
        ended before it forked (start another). Past ``timeout`` the command is killed and
        ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` does."""
        request = json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            socket.send_fds(self.sock, [request], [null, out_write, err_write])
        except OSError:
            for fd in (out_read, err_read):
                os.close(fd)
            return None
        finally:
            for fd in (null, out_write, err_write):
                os.close(fd)
        deadline = time.monotonic() + timeout
        try:
            started = self._reply()
            if started is None:
                return None
            out, err = self._drain(out_read, err_read, deadline, started["pid"], argv, timeout)
            ended = self._reply()
            if ended is None:
                raise RuntimeError("the pi fork server ended while a command ran")
            return ended["status"], out, err
        finally:
            os.close(out_read)
            os.close(err_read)

    def _drain(
        self, out_fd: int, err_fd: int, deadline: float, pid: int, argv: list[str], timeout: float
    ) -> tuple[bytes, bytes]:
        """Both pipes read to their end (every holder closed them), or the command killed at the
        deadline."""
        chunks: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
        open_fds = [out_fd, err_fd]
        while open_fds:
            remaining = deadline - time.monotonic()
            ready = select.select(open_fds, [], [], max(0.0, remaining))[0] if remaining > 0 else []
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._reply()  # the server reaped it
                raise subprocess.TimeoutExpired(
                    argv, timeout, bytes(chunks[out_fd]), bytes(chunks[err_fd])
                )
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd] += data
                else:
                    open_fds.remove(fd)
        return bytes(chunks[out_fd]), bytes(chunks[err_fd])

    def close(self) -> bytes:
        """Stop the server (and any command still running); what it wrote itself."""
        self.sock.close()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        own = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.own_output, 1 << 16):
                own += chunk
        os.close(self.own_output)
        return own


_servers: dict[str, PiForks] = {}


def run_pi(argv: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    """``argv`` (a ``pi`` console script and its arguments) through this test process's fork
    server of that script, in the current working directory and environment (see
    :meth:`PiForks.run`)."""
    env = dict(os.environ)
    for _ in range(3):
        server = _servers.get(argv[0])
        if server is not None and (
            server.key != _environment_key(env) or server.proc.poll() is not None
        ):
            _servers.pop(argv[0]).close()
            server = None
        if server is None:
            server = _servers[argv[0]] = PiForks(argv[0], env)
        result = server.run(argv, timeout, cwd=os.getcwd(), env=env)
        if result is not None:
            return result
        own = _servers.pop(argv[0]).close()
    raise RuntimeError(
        f"the pi fork server of {argv[0]} ended three times before a command: {own!r}"
    )


def close_servers() -> None:
    while _servers:
        _servers.popitem()[1].close()


# -- the server (this file run as a script) ---------------------------------------------------


def _serve(sock: socket.socket) -> bool:
    """Fork once per request; ``True`` in a child, which has become its command (the caller
    then runs ``pi``'s main), ``False`` in the server when the client has gone."""
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except OSError:
            return False
        if not message:
            return False
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            sock.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = request["argv"]
            signal.signal(signal.SIGINT, signal.default_int_handler)
            return True
        for fd in fds:
            os.close(fd)
        try:
            sock.send(json.dumps({"pid": pid}).encode())
            _, status = os.waitpid(pid, 0)
            sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
        except OSError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return False


def _main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    pi = Path(sys.argv[2])
    # what the console script has: its own folder first on sys.path, not this one
    sys.path[0] = str(pi.parent)
    sys.argv = [str(pi)]
    import _pi_entry

    _pi_entry._tune_malloc()
    import gc
    import importlib.metadata

    gc.disable()
    try:
        from pi_core._cli import main as cli_main

        for entry_point in importlib.metadata.entry_points(group="pi"):
            entry_point.load()
    finally:
        gc.freeze()
        gc.enable()
    import threading

    assert threading.active_count() == 1, threading.enumerate()  # fork copies this thread alone
    if not _serve(sock):
        os._exit(0)
    sys.exit(cli_main())


if __name__ == "__main__":
    _main()
