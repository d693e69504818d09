"""The container backend: bash commands and file tools inside a container, through a
docker-compatible CLI (``podman``, ``docker``, ``nerdctl``).

Two modes:

* ``container="NAME"``: ``exec`` into that running container (it is never started or removed);
* ``image="IMAGE"``: :meth:`ContainerBackend.start` (or ``async with``) runs
  ``CLI [cli_args] run -d --rm --name pi-sandbox-XXXX [run_args] -v WORKSPACE:WORKDIR -w WORKDIR
  IMAGE bash -c LOOP`` (a ``bash`` PID 1 that reaps orphans and stops on SIGTERM), and
  :meth:`ContainerBackend.aclose` removes it (``rm -f -t 0``). A call before ``start`` starts it;
  a call after ``aclose`` raises ``SandboxUnavailable``.

pi's own files (``protected``: the session's :attr:`~pi_core.SessionContext.protected_files`)
that lie in the workspace are mounted over it read-only (``-v FILE:PATH:ro``), and the hidden ones
(the audit log) as an empty read-only file of this machine's temporary directory (removed with
the container), so a command can neither change nor read them (``Read-only file system``); a
container named with ``container=`` was started by someone else, with its own mounts, and gets
none of this.

``cli_args`` are global flags (``["--runtime", "runc", "--cgroup-manager", "cgroupfs"]``),
``run_args`` flags of ``run`` only (``["--ulimit", "nofile=1024:1024"]``); nothing
machine-specific is built in.

**Commands** run as ``CLI exec -w CWD -e K=V ... -e PI_EXEC_ID=TOKEN CONTAINER bash -c 'exec
2>&1; exec bash -c "$1"' bash COMMAND``: stderr joins stdout inside the container (one stream,
arrival order), stdin is closed, the exit code is ``exec``'s (``128 + N`` for signal ``N``). A
command longer than one argument may be (128 KiB) goes over ``exec -i``'s stdin instead
(:data:`LONG_EXEC_WRAPPER`).
The container's own environment is kept; of ``env`` (the environment the bash tool built on this
machine) only what :func:`pi_core.backends.remote_environment` selects is added with ``-e``: the
variables pi set or changed (``PI_*``, ``[env] set``, spawn-hook changes) and those named in
``pass_env``; never the rest of this machine's environment (its API keys...). Every process
the command starts inherits ``PI_EXEC_ID``; on timeout or cancellation a second ``exec`` finds
them by that variable in ``/proc/*/environ`` (whatever process group or session they moved to,
orphans included), stops them and sends SIGTERM (no shell reports a child killed before it), waits ``kill_grace`` seconds, then SIGKILLs until none is
left; then the local client is killed. A process that clears its environment escapes that
search. A background job (``server &``) outlives the command, as with the local backend.

**File tools** run inside the container too (:class:`~pi_sandbox_plugin.backends.shell_files.
ShellFileOperations`: one ``exec`` of a short ``bash`` script per operation using only bash,
coreutils and ``rg``), so paths are the container's (the workspace is at ``workdir``;
:meth:`ContainerBackend.container_path` maps a workspace path).

**Network allow-list** (``proxy=``, image mode only): the container starts with ``--network
none`` (a loopback of its own, nothing else) and a bridge (:mod:`pi_sandbox_plugin.network.bridge`)
runs on this machine inside the container's network namespace only (``nsenter -t PID -n``, which
needs the privilege to enter it: root, or the engine's user namespace), listening on
``127.0.0.1:3128`` there and connecting to the session's
:class:`~pi_sandbox_plugin.network.proxy.NetworkProxy` on a Unix socket outside the container;
the proxy serves it while a command runs, its connections attributed to that tool call. Each
command gets ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` (both cases) pointing there. No host
Unix socket is mounted into the container.

Errors: the CLI missing, or ``exec`` failing itself (container gone, exit 125), raises
:class:`~pi_sandbox_plugin.backends.errors.SandboxUnavailable` with the CLI's message; a missing
working directory gives Pi's ``Working directory does not exist`` text.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import trio

from pi_core import ProtectedFile
from pi_core.backends import (
    CommandOutput,
    command_fits_argv,
    kill_process_group,
    long_command_file,
    missing_cwd_error,
    remote_environment,
    stream_process,
)
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.shell_files import ShellFileOperations

if TYPE_CHECKING:
    from pi_sandbox_plugin.network.proxy import NetworkProxy

EXEC_WRAPPER = 'exec 2>&1; exec bash -c "$1"'
"""Run as ``bash -c EXEC_WRAPPER bash COMMAND``: merge stderr into stdout, then run COMMAND."""

LONG_EXEC_WRAPPER = "exec 2>&1 3<&0 </dev/null; . /dev/fd/3"
"""Run as ``exec -i ... bash -c LONG_EXEC_WRAPPER bash`` with a command too long for one
argument (128 KiB) on stdin: merge stderr into stdout, take the command from stdin, give it
``/dev/null`` as stdin, and source it (``$0`` is ``bash``, ``"$@"`` empty, as above)."""

PID1_LOOP = "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"
"""PID 1 of a container started from an image: sleeps, reaps orphans, exits on SIGTERM."""

KILL_SCRIPT = r"""
tok=$1 steps=$2
marked() {
  local d p e
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    while IFS= read -r -d '' e; do
      if [ "$e" = "PI_EXEC_ID=$tok" ]; then printf '%s ' "$p"; break; fi
    done 2>/dev/null < "$d/environ"
  done
}
pids=$(marked)
[ -z "$pids" ] && exit 0
kill -STOP $pids 2>/dev/null; kill -TERM $pids 2>/dev/null; kill -CONT $pids 2>/dev/null
n=0
while [ "$n" -lt "$steps" ]; do
  sleep 0.05
  pids=$(marked)
  [ -z "$pids" ] && exit 0
  n=$((n + 1))
done
n=0
while pids=$(marked); [ -n "$pids" ] && [ "$n" -lt 500 ]; do
  kill -KILL $pids 2>/dev/null
  sleep 0.02
  n=$((n + 1))
done
"""
"""``$1`` the token, ``$2`` grace steps of 50 ms: kill every process whose environment holds
``PI_EXEC_ID=$1`` (SIGTERM, grace, then SIGKILL until none is left)."""

_CLI_ERROR_CODES = (125, 126, 127)
"""Exit codes with which docker-compatible CLIs report their own failures."""


class ContainerBackend(ShellFileOperations):
    """A :class:`~pi_core._backend_kit.operations.BashOperations` and
    :class:`~pi_core._backend_kit.operations.FileOperations` inside a container (see the module).

    Exactly one of ``container`` (a running container's name) and ``image`` (with
    ``workspace``, the host directory mounted at ``workdir``). ``cli``: the program;
    ``cli_args``: its global flags; ``run_args``: flags of ``run``; ``name``: the started
    container's name (default ``pi-sandbox-`` + random hex). ``kill_grace``: seconds between
    SIGTERM and SIGKILL. ``rg``: the container's ``rg``. ``drain_idle``/``drain_max``: seconds
    output is still read after ``exec`` returned. ``start_timeout``: seconds for ``run``/``rm``.
    ``proxy``: the session's network proxy, the container's only way out (image mode; see the
    module).

    Raises ``ValueError`` for a bad combination of arguments.
    """

    def __init__(
        self,
        *,
        cli: str = "podman",
        cli_args: Sequence[str] = (),
        container: str | None = None,
        image: str | None = None,
        workspace: str | None = None,
        workdir: str = "/work",
        run_args: Sequence[str] = (),
        name: str | None = None,
        kill_grace: float = 1.0,
        rg: str = "rg",
        drain_idle: float = 0.1,
        drain_max: float = 1.0,
        start_timeout: float = 120.0,
        pass_env: Sequence[str] = (),
        protected: Mapping[str, ProtectedFile] | None = None,
        proxy: NetworkProxy | None = None,
    ) -> None:
        super().__init__(rg=rg)
        if proxy is not None and not image:
            raise ValueError("a network proxy needs a container started from an image")
        self.proxy = proxy
        self.python = os.path.realpath(sys.executable)
        self._bridge: trio.Process | None = None
        self._socket_dir: str | None = None
        self.pass_env = tuple(pass_env)
        if bool(container) == bool(image):
            raise ValueError("give exactly one of container (to exec into) and image (to run)")
        if image and not workspace:
            raise ValueError("a container started from an image needs the workspace to mount")
        self.cli = cli
        self.cli_args = list(cli_args)
        self.image = image or None
        self.workspace = os.path.realpath(workspace) if workspace else None
        self.workdir = workdir
        self.run_args = list(run_args)
        self.container = container or name or f"pi-sandbox-{secrets.token_hex(6)}"
        self.kill_grace = kill_grace
        self.drain_idle = drain_idle
        self.drain_max = drain_max
        self.start_timeout = start_timeout
        self._started = False
        self._closed = False
        self._start_lock = trio.Lock()
        self.protected: Mapping[str, ProtectedFile] = protected if protected is not None else {}
        self._empty: str | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def _cli(self, *args: str) -> list[str]:
        return [self.cli, *self.cli_args, *args]

    def _check_cli(self) -> None:
        if shutil.which(self.cli) is None:
            raise SandboxUnavailable(
                f"{self.cli} is not installed: the container sandbox cannot run"
            )

    async def _run_cli(self, args: list[str], *, stdin: bytes | None = None) -> CommandOutput:
        """Run the CLI to completion (own session, killed on cancellation)."""
        self._check_cli()
        try:
            result = await trio.run_process(
                args,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                start_new_session=True,
                deliver_cancel=kill_process_group,
            )
        except OSError as exc:
            raise SandboxUnavailable(f"{self.cli} cannot start: {exc}") from exc
        code = result.returncode
        return CommandOutput(
            exit_code=128 - code if code < 0 else code, stdout=result.stdout, stderr=result.stderr
        )

    async def start(self) -> None:
        """Start the container from ``image`` (nothing to do for ``container``); idempotent.

        Raises :class:`SandboxUnavailable` with the CLI's message when ``run`` fails, or
        ``the container sandbox is closed`` after :meth:`aclose`."""
        async with self._start_lock:
            if self._closed:
                raise SandboxUnavailable("the container sandbox is closed")
            if self._started or self.image is None:
                return
            assert self.workspace is not None
            args = self._cli("run", "-d", "--rm", "--name", self.container, *self.run_args)
            if self.proxy is not None:
                args += ["--network", "none"]
            args += ["-v", f"{self.workspace}:{self.workdir}", "-w", self.workdir]
            args += self.protected_mounts()
            args += [self.image, "bash", "-c", PID1_LOOP]
            with trio.fail_after(self.start_timeout):
                result = await self._run_cli(args)
            if result.exit_code != 0:
                await self._remove()
                message = result.stderr.decode("utf-8", "replace").strip()
                raise SandboxUnavailable(f"{self.cli} run {self.image} failed: {message}")
            self._started = True
            if self.proxy is not None:
                await self._start_bridge()

    @property
    def proxy_socket(self) -> str:
        """The Unix socket (on this machine) the bridge connects to."""
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="pi-network-")
        return os.path.join(self._socket_dir, "proxy.sock")

    async def _start_bridge(self) -> None:
        """Start the bridge in the container's network namespace (see the module);
        :class:`SandboxUnavailable` when it cannot."""
        from pi_sandbox_plugin.network.bridge import PORT, bridge_argv

        found = await self._run_cli(self._cli("inspect", "-f", "{{.State.Pid}}", self.container))
        pid = found.stdout.decode().strip()
        if found.exit_code != 0 or not pid.isdigit():
            raise SandboxUnavailable(
                f"{self.cli} inspect {self.container} failed: {found.stderr!r}"
            )
        argv = ["nsenter", "-t", pid, "-n", "--"]
        argv += bridge_argv(self.python, self.proxy_socket, PORT, ["cat"])
        try:
            self._bridge = await trio.lowlevel.open_process(
                argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            raise SandboxUnavailable(f"the network bridge cannot start: {exc}") from exc
        with trio.move_on_after(0.5):
            await self._bridge.wait()
            raise SandboxUnavailable(
                f"the network bridge cannot enter the container's network namespace "
                f"(nsenter -t {pid} -n exited with {self._bridge.returncode})"
            )

    async def _stop_bridge(self) -> None:
        with trio.CancelScope(shield=True):
            if self._bridge is not None:
                await kill_process_group(self._bridge)
                await self._bridge.wait()
                if self._bridge.stdin is not None:
                    await self._bridge.stdin.aclose()
                self._bridge = None
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
                self._socket_dir = None

    async def _remove(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(self.start_timeout):
            await self._run_cli(self._cli("rm", "-f", "-t", "0", self.container))
        if self._empty is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._empty)
            self._empty = None

    async def aclose(self) -> None:
        """Remove the container started from ``image`` (shielded; nothing for ``container``);
        later calls raise :class:`SandboxUnavailable`."""
        self._closed = True
        await self._stop_bridge()
        if self.image is not None and self._started:
            self._started = False
            await self._remove()

    async def __aenter__(self) -> ContainerBackend:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def protected_mounts(self) -> list[str]:
        """The ``-v`` arguments that keep pi's own files in the workspace from the container's
        commands: read-only, or hidden behind an empty read-only file (see the module)."""
        args = []
        for path, protected in sorted(self.protected.items()):
            inside = self.container_path(path)
            if inside == path or not os.path.exists(path):
                continue
            source = path
            if protected.hidden:
                if self._empty is None:
                    fd, self._empty = tempfile.mkstemp(prefix="pi-hidden-")
                    os.fchmod(fd, 0o444)
                    os.close(fd)
                source = self._empty
            args += ["-v", f"{source}:{inside}:ro"]
        return args

    def container_path(self, host_path: str) -> str:
        """``host_path`` inside the workspace as the container sees it (under ``workdir``);
        other paths unchanged."""
        if self.workspace is None:
            return host_path
        real = os.path.realpath(host_path)
        if real == self.workspace:
            return self.workdir
        if real.startswith(self.workspace + "/"):
            return self.workdir.rstrip("/") + real[len(self.workspace) :]
        return host_path

    # -- BashOperations -------------------------------------------------------------------------

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        """Run ``command`` in the container in ``cwd`` (a container path); see
        :class:`pi_core.BashOperations` and the module docstring.

        Errors: :class:`SandboxUnavailable`; ``ToolError`` ``Working directory does not exist:
        {cwd}\\nCannot execute bash commands.``; :class:`~pi_core.CommandTimeout`.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        await self.start()
        self._check_cli()
        if self.proxy is None:
            return await self._exec(command, cwd, on_data, env, timeout, {})
        from pi_sandbox_plugin.network.bridge import PORT, proxy_environment
        from pi_sandbox_plugin.network.proxy import current_tool_call_id, serving

        async with serving(self.proxy, self.proxy_socket, current_tool_call_id()):
            return await self._exec(command, cwd, on_data, env, timeout, proxy_environment(PORT))

    async def _exec(
        self,
        command: str,
        cwd: str,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None,
        timeout: float | None,
        extra_env: Mapping[str, str],
    ) -> int | None:
        token = secrets.token_hex(12)
        script = None if command_fits_argv(command) else long_command_file(command)
        args = self._cli("exec", *([] if script is None else ["-i"]), "-w", cwd)
        for key, value in {**remote_environment(env, self.pass_env), **extra_env}.items():
            args += ["-e", f"{key}={value}"]
        if script is None:
            args += ["-e", f"PI_EXEC_ID={token}", self.container, "bash", "-c", EXEC_WRAPPER]
            args += ["bash", command]
        else:
            args += ["-e", f"PI_EXEC_ID={token}", self.container, "bash", "-c"]
            args += [LONG_EXEC_WRAPPER, "bash"]
        with tempfile.TemporaryFile() as cli_errors:
            try:
                process = await trio.lowlevel.open_process(
                    args,
                    stdin=subprocess.DEVNULL if script is None else script,
                    stdout=subprocess.PIPE,
                    stderr=cli_errors,
                    start_new_session=True,
                )
            except OSError as exc:
                raise SandboxUnavailable(f"{self.cli} cannot start: {exc}") from exc
            finally:
                if script is not None:
                    script.close()

            async def kill() -> None:
                await self._kill_tree(token)
                with trio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    await kill_process_group(process)
                    await process.wait()

            code = await stream_process(
                process,
                on_data,
                timeout=timeout,
                kill=kill,
                drain_idle=self.drain_idle,
                drain_max=self.drain_max,
            )
            cli_errors.seek(0)
            errors = cli_errors.read().decode("utf-8", "replace").strip()
        if code in _CLI_ERROR_CODES and errors:
            if not await self._is_dir(cwd):
                raise missing_cwd_error(cwd)
            raise SandboxUnavailable(f"{self.cli} exec failed: {errors}")
        return code

    async def _is_dir(self, path: str) -> bool:
        result = await self._run_cli(self._cli("exec", self.container, "test", "-d", path))
        if result.exit_code in _CLI_ERROR_CODES and result.stderr:
            message = result.stderr.decode("utf-8", "replace").strip()
            raise SandboxUnavailable(f"{self.cli} exec failed: {message}")
        return result.exit_code == 0

    async def _kill_tree(self, token: str) -> None:
        """Kill every process of the container carrying ``PI_EXEC_ID=token`` (shielded)."""
        steps = str(max(0, round(self.kill_grace / 0.05)))
        with trio.CancelScope(shield=True), trio.move_on_after(self.kill_grace + 30):
            await self._run_cli(
                self._cli(
                    "exec", self.container, "bash", "-c", KILL_SCRIPT, "pi-kill", token, steps
                )
            )

    # -- FileOperations (ShellFileOperations) ---------------------------------------------------

    async def run_script(
        self, script: str, args: Sequence[str], *, stdin: bytes | None = None
    ) -> CommandOutput:
        """``CLI exec [-i] -e LC_ALL=C CONTAINER bash -c script pi-files *args``;
        :class:`SandboxUnavailable` when ``exec`` itself fails."""
        await self.start()
        flags = ["-i"] if stdin is not None else []
        result = await self._run_cli(
            self._cli(
                "exec", *flags, "-e", "LC_ALL=C", self.container, "bash", "-c", script, "pi-files"
            )
            + list(args),
            stdin=stdin,
        )
        if result.exit_code == 125 or (
            result.exit_code in _CLI_ERROR_CODES and result.stderr.startswith(b"Error")
        ):
            message = result.stderr.decode("utf-8", "replace").strip()
            raise SandboxUnavailable(f"{self.cli} exec failed: {message}")
        return result


__all__ = ["EXEC_WRAPPER", "KILL_SCRIPT", "PID1_LOOP", "ContainerBackend"]
