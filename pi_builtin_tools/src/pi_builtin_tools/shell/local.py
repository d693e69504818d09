"""The local :class:`~pi_core.BashOperations` backend on trio.

Each command runs as ``SHELL -c COMMAND`` under a small supervisor process
(:mod:`pi_builtin_tools.shell._supervisor`) that starts its own session (process group) and is a
child subreaper, so the whole tree of the command can be found and killed, including descendants
that ignore SIGTERM, moved to another process group or session, or were orphaned:

* stdin is ``/dev/null`` (a command reading stdin gets end of file at once);
* a command longer than one ``argv`` element holds (128 KiB) reaches the shell as an anonymous
  0600 temporary file it sources (:func:`pi_core.backends.long_command_file`);
* stdout and stderr are one pipe: chunks reach ``on_data`` as raw bytes in arrival order;
* the exit code is the shell's, or 128 + N when it died of signal N;
* on timeout or trio cancellation the tree gets SIGTERM, ``kill_grace`` seconds, then SIGKILL
  until nothing is left; the cleanup is shielded. Timeout raises
  :class:`~pi_core.CommandTimeout`, cancellation re-raises ``trio.Cancelled``;
* when the shell exits, the call returns even if a background child (``server &``) still holds
  the pipe: output is read until end of file, ``drain_idle`` seconds without data, or
  ``drain_max`` seconds after the exit; that child keeps running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import trio

from pi_core import ToolError
from pi_core.backends import (
    command_fits_argv,
    find_program,
    long_command_file,
    sourcing_command,
    stream_process,
)

SUPERVISOR = str(Path(__file__).with_name("_supervisor.py"))
"""Path of the supervisor script, run with ``sys.executable -I -S``."""


def resolve_shell(shell_path: str | None = None) -> str:
    """The shell Pi would use.

    ``shell_path`` when given (it must exist, else ``ToolError("Custom shell path not found:
    {path}")``); else ``/bin/bash`` if it exists; else ``bash`` on ``PATH``; else ``sh`` on
    ``PATH`` (its absolute folders); else ``ToolError("spawn sh ENOENT")``.
    """
    if shell_path:
        if not os.path.exists(shell_path):
            raise ToolError(f"Custom shell path not found: {shell_path}")
        return shell_path
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    for name in ("bash", "sh"):
        found = find_program(name)  # PATH's absolute folders: never a file of the workspace
        if found:
            return found
    raise ToolError("spawn sh ENOENT")


def _check_spawn(cwd: str, shell_path: str | None) -> str:
    """The shell to run, after checking that ``cwd`` and the shell exist (Pi's texts)."""
    if not os.path.isdir(cwd):
        raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
    shell = resolve_shell(shell_path)
    if not os.access(shell, os.X_OK):
        raise ToolError(f"spawn {shell} {'EACCES' if os.path.exists(shell) else 'ENOENT'}")
    return shell


class LocalBashOperations:
    """Runs commands on this machine (the ``trylast`` default of ``pi_bash_operations``).

    ``shell_path``: the shell to use instead of Pi's resolution (:func:`resolve_shell`).
    ``kill_grace``: seconds between SIGTERM and SIGKILL when the tree is killed.
    ``drain_idle`` / ``drain_max``: how long output is still read after the shell exited (see
    the module docstring).
    """

    def __init__(
        self,
        *,
        shell_path: str | None = None,
        kill_grace: float = 1.0,
        drain_idle: float = 0.1,
        drain_max: float = 1.0,
    ) -> None:
        self.shell_path = shell_path
        self.kill_grace = kill_grace
        self.drain_idle = drain_idle
        self.drain_max = drain_max

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        """Run ``command`` in ``cwd``; see :class:`pi_core.BashOperations` and the module
        docstring.

        Errors: ``ToolError`` ``Working directory does not exist: {cwd}\\nCannot execute bash
        commands.``, ``Custom shell path not found: {path}``, ``spawn {shell} ENOENT``;
        :class:`~pi_core.CommandTimeout` when ``timeout`` (seconds, > 0) passes.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        shell = _check_spawn(cwd, self.shell_path)

        script = None if command_fits_argv(command) else long_command_file(command)
        fds: tuple[int, ...] = ()
        if script is not None:
            fds = (script.fileno(),)
            command = sourcing_command(script.fileno())
        lifeline_r, lifeline_w = os.pipe()
        spawned = False
        try:
            process = await trio.lowlevel.open_process(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    SUPERVISOR,
                    repr(self.kill_grace),
                    str(lifeline_r),
                    shell,
                    command,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                pass_fds=(lifeline_r, *fds),
            )
            spawned = True
        finally:
            os.close(lifeline_r)
            if script is not None:
                script.close()
            if not spawned:
                os.close(lifeline_w)

        try:
            return await stream_process(
                process,
                on_data,
                timeout=timeout,
                kill=lambda: self._kill_tree(process),
                drain_idle=self.drain_idle,
                drain_max=self.drain_max,
                settle=None,
                drain_after_timeout=True,
            )
        finally:
            os.close(lifeline_w)

    async def _kill_tree(self, process: trio.Process) -> None:
        """Ask the supervisor to kill the tree and wait for it (shielded); if it does not finish
        in time, SIGKILL its process group and the supervisor itself."""
        with trio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with trio.move_on_after(self.kill_grace + 5):
                await process.wait()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.kill()
                await process.wait()


__all__ = ["SUPERVISOR", "LocalBashOperations", "resolve_shell"]
