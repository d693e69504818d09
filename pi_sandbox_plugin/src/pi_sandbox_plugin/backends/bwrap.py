"""The bubblewrap backend: bash commands and file tools in a ``bwrap`` sandbox.

What a sandboxed process sees (:meth:`BwrapBackend.sandbox_args`)::

    /            the host's root, read-only           (--ro-bind / /)
    /dev, /proc  a minimal /dev, this sandbox's /proc  (--dev /dev --proc /proc)
    /tmp         private and empty                     (--tmpfs /tmp)
    WORKSPACE    read-write, at its own path           (--bind WS WS)
    denied dir   an empty read-only tmpfs              (--tmpfs D --remount-ro D)
    denied file  unreadable and unwritable: EACCES     (--ro-bind /dev/null F, on a nodev mount)
    pi's file    read-only (pi.toml, rules, hooks)     (--ro-bind P P)

plus new PID, IPC, UTS (and cgroup) namespaces, no network unless ``network=True``
(``--unshare-net``: only a loopback of its own), ``--die-with-parent``, ``--new-session`` and
``--cap-drop ALL`` (started by root, bwrap would keep every capability, and a command could
``umount`` a mask).

The denied paths are ``deny_paths`` (fixed) plus, with ``masks`` (a session's
:meth:`~pi_sandbox_plugin.policies.file_identity.FileIdentities.mask_plan`), asked at each
sandbox start: every name found of every denied file (hard links, the places a bind mount shows
it), pi's hidden files, and pi's own files to mount read-only. A denied file with more links
than names found stops the sandbox (:class:`SandboxUnavailable` naming it): a command could read
it under the name not found. A command cannot add a name to a masked file: ``link(2)`` of a
masked name, or of a file outside the workspace, crosses a mount (``EXDEV``).

**Network allow-list** (``proxy=``, ``[sandbox.network] mode = "allow-list"``): the sandbox still
has no network of its own; each command gets a Unix socket of the session's
:class:`~pi_sandbox_plugin.network.proxy.NetworkProxy` (in a directory only this user can enter,
served while the command runs, its connections attributed to the tool call), bound into the
sandbox at :data:`PROXY_SOCKET`, and runs behind the bridge
(:mod:`pi_sandbox_plugin.network.bridge`): ``127.0.0.1:3128`` inside leads to the proxy, and
``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` (both cases) point there. ``/run`` is an empty
tmpfs (no host Unix socket: the container engine's, D-Bus, ``$XDG_RUNTIME_DIR``); abstract Unix
sockets belong to the network namespace. A program that ignores the variables has no route, no
DNS, no UDP and no IPv6 path out.

**Commands** run as ``bwrap ... -- SHELL -c COMMAND``, one sandbox per command (a command longer
than one argument may be, 128 KiB, is handed over as an inherited descriptor of an anonymous
temporary file: ``SHELL -c ". /dev/fd/N"``). bwrap's own init
is PID 1 of the sandbox: when the shell exits, bwrap exits with its code (``128 + N`` for signal
``N``) and the kernel kills everything left in the PID namespace, so background jobs
(``server &``) end with the command that started them (unlike the local backend). On timeout or
cancellation the sandbox's init (PID 1 of the namespace, whose host pid bwrap reports on
``--info-fd``) gets ``SIGKILL`` first, which ends every process of the namespace, whatever
session or process group it moved to; then bwrap's process group. ``--die-with-parent`` alone
would not do: the init sets its death signal only after it left bwrap's process group
(``--new-session``), and a bwrap killed in between left the sandbox running.

**File tools** run inside the same kind of sandbox (:class:`~pi_sandbox_plugin.backends.shell_files.
ShellFileOperations`: one short ``bash`` script per operation, ``rg`` for grep and find), so they
see exactly what bash sees: nothing of the host's ``/tmp`` outside the workspace, denied
directories empty, denied files ``EACCES``, everything outside the workspace read-only
(``EROFS``).

**Unavailable sandbox**: if ``bwrap`` is missing or cannot create its namespaces, every call
raises :class:`SandboxUnavailable` (a :class:`~pi_core._errors.ToolError`, so the tool call ends
with its text as an error result) naming the reason; nothing ever runs unsandboxed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from pi_core.backends import (
    CommandOutput,
    LocalWorkspaceTree,
    command_fits_argv,
    find_rg,
    kill_process_group,
    long_command_file,
    missing_cwd_error,
    sourcing_command,
    stream_process,
)
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.shell_files import ShellFileOperations

if TYPE_CHECKING:
    from pi_sandbox_plugin.network.proxy import NetworkProxy
    from pi_sandbox_plugin.policies.file_identity import MaskPlan

PROXY_SOCKET = "/tmp/.pi-network-proxy.sock"
"""Where the proxy's socket is in a sandbox with a network allow-list."""


def _default_rg() -> str:
    """:func:`~pi_core._backend_kit.local_files.find_rg`, else the bare name (the sandbox's ``PATH``)."""
    try:
        return find_rg()
    except FileNotFoundError:
        return "rg"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class _SandboxInit:
    """The host pid of a sandbox's init, from bwrap's ``--info-fd`` (see the module): ``argv``
    and ``pass_fds`` add the descriptor to bwrap's command, ``started`` closes pi's copy of its
    writing end once bwrap runs, ``kill`` ends the sandbox, ``close`` the reading end."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def argv(self, argv: Sequence[str]) -> list[str]:
        return [argv[0], "--info-fd", str(self._write), *argv[1:]]

    def pass_fds(self, others: Sequence[int] = ()) -> tuple[int, ...]:
        return (*others, self._write)

    def started(self) -> None:
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def close(self) -> None:
        self.started()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    async def kill(self, process: trio.Process) -> None:
        """``SIGKILL`` the sandbox's init and wait until it has ended (so has every process of
        the sandbox: at most :data:`INFO_WAIT` seconds), then bwrap's process group. The init's
        pid is read once bwrap wrote it (right after it cloned the init; at most
        :data:`INFO_WAIT` seconds, end of file when bwrap failed before) and signalled through a
        pidfd only while it is still bwrap's child (bwrap, not reaped, keeps it from being
        reaped)."""
        self.started()  # bwrap runs: only its copy of the writing end may hold the pipe open
        init = None
        if self._read >= 0:
            with trio.move_on_after(INFO_WAIT):
                init = await _read_child_pid(self._read)
        if init is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                pidfd = os.pidfd_open(init)
                try:
                    if _parent_of(init) == process.pid:
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                        # an init ends only once every other process of its PID namespace has
                        # (the kernel kills and reaps them first): the sandbox is empty then
                        with trio.move_on_after(INFO_WAIT):
                            await trio.lowlevel.wait_readable(pidfd)
                finally:
                    os.close(pidfd)
        await kill_process_group(process)


INFO_WAIT = 5.0
"""Seconds :meth:`_SandboxInit.kill` waits for bwrap to report its init's pid."""


async def _read_child_pid(fd: int) -> int | None:
    """The ``child-pid`` of bwrap's info, once the JSON object is whole; ``None`` at the pipe's
    end of file without it (the descriptor is left open)."""
    data = b""
    os.set_blocking(fd, False)
    while True:
        await trio.lowlevel.wait_readable(fd)
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            continue
        data += chunk
        try:
            pid = json.loads(data).get("child-pid")
        except (ValueError, AttributeError):
            if chunk:
                continue
            return None
        return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 else None


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return int(file.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


async def _run_sandboxed(
    argv: Sequence[str], *, stdin: Any, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``trio.run_process`` of a bwrap command line (output captured, no check) whose
    cancellation ends the sandbox as :meth:`_SandboxInit.kill` does."""
    info = _SandboxInit()
    try:
        return await trio.run_process(
            info.argv(argv),
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
            start_new_session=True,
            pass_fds=info.pass_fds(),
            deliver_cancel=info.kill,
        )
    finally:
        info.close()


class BwrapBackend(ShellFileOperations):
    """A :class:`~pi_core._backend_kit.operations.BashOperations` and
    :class:`~pi_core._backend_kit.operations.FileOperations` in a bubblewrap sandbox (see the module).

    ``workspace``: the directory mounted read-write (its realpath, at that path).
    ``network``: keep the host's network (default: none). ``deny_paths``: absolute paths masked
    in the sandbox (missing ones are skipped). ``masks``: asked at each sandbox start with the
    writable mounts, what else to hide or mount read-only (see the module). ``bwrap``: the
    program. ``shell``: the shell of
    commands (it must exist in the sandbox). ``extra_args``: more bwrap arguments, appended
    before ``--chdir``. ``rg``: the ``rg`` the file tools run (default: this Python's ripgrep
    wheel, else ``PATH``'s). ``drain_idle``/``drain_max``: seconds output is still read after
    bwrap exited. ``proxy``: the session's network proxy, the only way out (see the module;
    ``network`` must then be false).
    """

    def __init__(
        self,
        workspace: str,
        *,
        network: bool = False,
        deny_paths: Sequence[str] = (),
        bwrap: str = "bwrap",
        shell: str = "/bin/bash",
        extra_args: Sequence[str] = (),
        rg: str | None = None,
        drain_idle: float = 0.1,
        drain_max: float = 1.0,
        masks: Callable[[Sequence[str]], MaskPlan] | None = None,
        proxy: NetworkProxy | None = None,
    ) -> None:
        super().__init__(rg=rg or _default_rg())
        if proxy is not None and network:
            raise ValueError("a network proxy needs the sandbox without the host's network")
        self.proxy = proxy
        self.python = os.path.realpath(sys.executable)
        self._socket_dir: str | None = None
        self._sockets = 0
        self.workspace = os.path.realpath(workspace)
        self.network = network
        self.fixed_deny_paths = [os.path.realpath(os.path.expanduser(p)) for p in deny_paths]
        self.deny_paths = list(self.fixed_deny_paths)
        """What the last sandbox hid (the fixed ``deny_paths`` and the ``masks``)."""
        self.masks = masks
        self.bwrap = bwrap
        self.shell = shell
        self.extra_args = list(extra_args)
        self.drain_idle = drain_idle
        self.drain_max = drain_max
        self._available = False

    # -- the sandbox ----------------------------------------------------------------------------

    def sandbox_args(self) -> list[str]:
        """The bwrap command line up to (not including) ``--chdir`` (see the module); blocking
        (``masks`` may walk the workspace). Raises :class:`SandboxUnavailable` when ``masks``
        finds a denied file it cannot hide."""
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--tmpfs", "/tmp", "--bind", self.workspace, self.workspace]
        for program in (self.rg, self.python) if self.proxy is not None else (self.rg,):
            if program.startswith("/tmp/") and os.path.exists(program):
                # the file tools' rg (or the bridge's Python) may live under the host's /tmp
                # (a virtual environment there), which the private /tmp hides: keep that one
                # binary visible, read-only
                args += ["--ro-bind", program, program]
        if self.proxy is not None:
            args += ["--tmpfs", "/run"]
        hidden = list(self.fixed_deny_paths)
        read_only: list[str] = []
        if self.masks is not None:
            plan = self.masks([self.workspace])
            if plan.problems:
                raise SandboxUnavailable(
                    f"bubblewrap cannot hide every name of a denied file: {plan.problems[0]}"
                )
            hidden += [p for p in plan.hidden if p not in hidden]
            read_only = [p for p in plan.read_only if not any(_under(p, h) for h in hidden)]
        self.deny_paths = hidden
        for path in hidden:
            if os.path.isdir(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            elif os.path.lexists(path):
                args += ["--ro-bind", "/dev/null", path]
        for path in read_only:
            args += ["--ro-bind", path, path]
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if not self.network:
            args.append("--unshare-net")
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", *self.extra_args]
        return args

    def visible(self, path: str) -> bool:
        """Whether ``path`` (absolute, on the host) is the same file inside the sandbox: not
        masked by a denied path, and not in the host's ``/tmp`` outside the workspace."""
        real = os.path.realpath(path)
        if any(_under(real, denied) for denied in self.deny_paths):
            return False
        return not _under(real, "/tmp") or _under(real, self.workspace)

    def checkpoint_tree(self, root: str, exclude: Sequence[str] = ()) -> LocalWorkspaceTree | None:
        """Checkpoints read and restore the workspace here, on the host (it is bind-mounted at
        the same path in the sandbox); ``None`` for a ``root`` outside it."""
        if not _under(os.path.realpath(root), self.workspace):
            return None
        return LocalWorkspaceTree(root, exclude)

    def cwd_usable(self, cwd: str) -> bool:
        """Whether ``cwd`` is a directory the sandbox shows (blocking: file system calls)."""
        return os.path.isdir(cwd) and self.visible(cwd)

    async def check_available(self) -> None:
        """Raise :class:`SandboxUnavailable` unless an empty sandbox starts (checked once per
        backend until it succeeds)."""
        if self._available:
            return
        if shutil.which(self.bwrap) is None:
            raise SandboxUnavailable(
                f"bubblewrap ({self.bwrap}) is not installed: the bwrap sandbox cannot run"
            )
        sandbox = await trio.to_thread.run_sync(self.sandbox_args)
        try:
            result = await _run_sandboxed(
                [*sandbox, "--chdir", "/", "--", self.shell, "-c", ":"],
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise SandboxUnavailable(f"bubblewrap cannot start: {exc}") from exc
        if result.returncode != 0:
            reason = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            raise SandboxUnavailable(
                f"bubblewrap cannot create the sandbox: {reason or f'exit code {result.returncode}'}"
            )
        self._available = True

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
        """Run ``command`` with ``shell -c`` in a new sandbox, in ``cwd``; see
        :class:`pi_core.BashOperations` and the module docstring.

        Errors: :class:`SandboxUnavailable`; ``ToolError`` ``Working directory does not exist:
        {cwd}\\nCannot execute bash commands.`` (also for a directory the sandbox hides);
        :class:`~pi_core.CommandTimeout`.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if not await trio.to_thread.run_sync(self.cwd_usable, cwd):
            raise missing_cwd_error(cwd)
        await self.check_available()
        if self.proxy is None:
            return await self._exec(command, cwd, on_data, env, timeout, None)
        from pi_sandbox_plugin.network.proxy import current_tool_call_id, serving

        async with serving(self.proxy, self._socket_path(), current_tool_call_id()) as path:
            return await self._exec(command, cwd, on_data, env, timeout, path)

    def _socket_path(self) -> str:
        """A new socket path in the session's private directory (made on first use)."""
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="pi-network-")
        self._sockets += 1
        return os.path.join(self._socket_dir, f"proxy-{self._sockets}.sock")

    async def _exec(
        self,
        command: str,
        cwd: str,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None,
        timeout: float | None,
        proxy_socket: str | None,
    ) -> int | None:
        sandbox = await trio.to_thread.run_sync(self.sandbox_args)
        script = None if command_fits_argv(command) else long_command_file(command)
        if script is not None:
            command = sourcing_command(script.fileno())
        argv = [self.shell, "-c", command]
        if proxy_socket is not None:
            from pi_sandbox_plugin.network.bridge import PORT, bridge_argv, proxy_environment

            sandbox += ["--bind", proxy_socket, PROXY_SOCKET]
            argv = bridge_argv(self.python, PROXY_SOCKET, PORT, argv)
            env = {**(os.environ if env is None else env), **proxy_environment(PORT)}
        info = _SandboxInit()
        try:
            process = await trio.lowlevel.open_process(
                info.argv([*sandbox, "--chdir", cwd, "--", *argv]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                pass_fds=info.pass_fds(() if script is None else (script.fileno(),)),
            )
        except BaseException:
            info.close()
            raise
        finally:
            if script is not None:
                script.close()
        info.started()

        async def kill() -> None:
            await info.kill(process)
            await process.wait()

        try:
            return await stream_process(
                process,
                on_data,
                timeout=timeout,
                kill=kill,
                drain_idle=self.drain_idle,
                drain_max=self.drain_max,
            )
        finally:
            info.close()

    async def aclose(self) -> None:
        """Remove the directory of the proxy's sockets (the session ends)."""
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    # -- FileOperations (ShellFileOperations) ---------------------------------------------------

    def _refuse_masked(self, path: str) -> None:
        """A denied file shows in the sandbox as ``/dev/null`` on a ``nodev`` mount: reading or
        replacing it is ``PermissionError`` (``EACCES``), not the special-file ``EINVAL``."""
        real = os.path.realpath(path)
        if any(_under(real, denied) for denied in self.deny_paths):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """:meth:`ShellFileOperations.read_bytes`; ``PermissionError`` for a denied path."""
        self._refuse_masked(path)
        return await super().read_bytes(path, offset, length)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """:meth:`ShellFileOperations.write_bytes`; ``PermissionError`` for a denied path."""
        self._refuse_masked(path)
        await super().write_bytes(path, data)

    async def run_script(
        self, script: str, args: Sequence[str], *, stdin: bytes | None = None
    ) -> CommandOutput:
        """Run ``bash -c script pi-files *args`` in a new sandbox (``LC_ALL=C``, the host's
        ``PATH``); :class:`SandboxUnavailable` when it cannot be created."""
        await self.check_available()
        sandbox = await trio.to_thread.run_sync(self.sandbox_args)
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LC_ALL": "C"}
        result = await _run_sandboxed(
            [*sandbox, "--chdir", "/", "--", "/bin/bash", "-c", script, "pi-files", *args],
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            env=env,
        )
        code = result.returncode
        return CommandOutput(
            exit_code=128 - code if code < 0 else code, stdout=result.stdout, stderr=result.stderr
        )


__all__ = ["PROXY_SOCKET", "BwrapBackend", "SandboxUnavailable"]
