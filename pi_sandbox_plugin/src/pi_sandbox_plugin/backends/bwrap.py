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

**Commands** run as ``bwrap ... -- SHELL -c COMMAND``, one sandbox per command (a command longer
than one argument may be, 128 KiB, is handed over as an inherited descriptor of an anonymous
temporary file: ``SHELL -c ". /dev/fd/N"``). bwrap's own init
is PID 1 of the sandbox: when the shell exits, bwrap exits with its code (``128 + N`` for signal
``N``) and the kernel kills everything left in the PID namespace, so background jobs
(``server &``) end with the command that started them (unlike the local backend). On timeout or
cancellation bwrap's process group gets ``SIGKILL``; ``--die-with-parent`` then kills the
sandbox's init and with it every process of the namespace, whatever session or process group it
moved to.

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

import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

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
    from pi_sandbox_plugin.policies.file_identity import MaskPlan


def _default_rg() -> str:
    """:func:`~pi_core._backend_kit.local_files.find_rg`, else the bare name (the sandbox's ``PATH``)."""
    try:
        return find_rg()
    except FileNotFoundError:
        return "rg"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


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
    bwrap exited.
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
    ) -> None:
        super().__init__(rg=rg or _default_rg())
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
        if self.rg.startswith("/tmp/") and os.path.exists(self.rg):
            # the file tools' rg may live under the host's /tmp (a virtual environment there),
            # which the private /tmp hides: keep that one binary visible, read-only
            args += ["--ro-bind", self.rg, self.rg]
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
            result = await trio.run_process(
                [*sandbox, "--chdir", "/", "--", self.shell, "-c", ":"],
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                start_new_session=True,
                deliver_cancel=kill_process_group,
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
        sandbox = await trio.to_thread.run_sync(self.sandbox_args)
        script = None if command_fits_argv(command) else long_command_file(command)
        if script is not None:
            command = sourcing_command(script.fileno())
        try:
            process = await trio.lowlevel.open_process(
                [*sandbox, "--chdir", cwd, "--", self.shell, "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                pass_fds=() if script is None else (script.fileno(),),
            )
        finally:
            if script is not None:
                script.close()

        async def kill() -> None:
            await kill_process_group(process)
            await process.wait()

        return await stream_process(
            process,
            on_data,
            timeout=timeout,
            kill=kill,
            drain_idle=self.drain_idle,
            drain_max=self.drain_max,
        )

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
        result = await trio.run_process(
            [
                *sandbox,
                "--chdir",
                "/",
                "--",
                "/bin/bash",
                "-c",
                script,
                "pi-files",
                *args,
            ],
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
            start_new_session=True,
            deliver_cancel=kill_process_group,
        )
        code = result.returncode
        return CommandOutput(
            exit_code=128 - code if code < 0 else code, stdout=result.stdout, stderr=result.stderr
        )


__all__ = ["BwrapBackend", "SandboxUnavailable"]
