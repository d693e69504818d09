"""The ``powershell`` tool (``docs/reference/tools.md``): Pi 1.6's PowerShell tool, on the shell
core of :mod:`pi_builtin_tools.shell.bash` (same parameters, output handling, truncation, exit and
timeout texts, ``structured_content``, environment).

It is registered on every platform but is not active by default. Off Windows every call (after
argument validation, before the timeout is validated) is the error ``The powershell tool is only
available on Windows.``. On Windows the executable is, in order: ``pwsh.exe`` on ``PATH``,
``%ProgramFiles%\\PowerShell\\7\\pwsh.exe``, ``powershell.exe`` on ``PATH``,
``%SystemRoot%\\System32\\WindowsPowerShell\\v1.0\\powershell.exe``; none →
``No PowerShell executable found. Install PowerShell or add powershell.exe/pwsh.exe to PATH.``.
It runs as ``EXE -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command COMMAND``, the
command prefixed with :data:`UTF8_OUTPUT_PREFIX` and, for Windows PowerShell 5.1
(``powershell.exe``) when it does not end with a backtick, suffixed with
:data:`WINDOWS_POWERSHELL_EXIT_SUFFIX` (5.1 reports redirected native stderr as a failure).

The tool always runs on this machine (:class:`LocalPowerShellOperations`), whatever bash
backend is configured. :class:`PowerShellLocator` takes the platform, the ``PATH`` lookup and the
environment as arguments, so the lookup is testable anywhere.
"""

from __future__ import annotations

import contextlib
import ntpath
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from pi_builtin_tools.shell.bash import (
    BashToolOptions,
    ShellToolConfig,
    create_shell_tool_definition,
)
from pi_builtin_tools.shell.output_files import FullOutputFiles
from pi_core import BashOperations, BashSpawnContext, ToolDefinition, ToolError
from pi_core.backends import EnvPolicy, stream_process

POWERSHELL_SHELL = ShellToolConfig(
    name="powershell",
    label="powershell",
    shell_name="PowerShell",
    prompt="PS>",
    temp_file_prefix="pi-powershell",
    prompt_snippet="Execute PowerShell commands",
)
"""The powershell tool's configuration of the shell core."""

NOT_WINDOWS_TEXT = "The powershell tool is only available on Windows."
NOT_FOUND_TEXT = (
    "No PowerShell executable found. Install PowerShell or add powershell.exe/pwsh.exe to PATH."
)
POWERSHELL_ARGS = ("-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command")
UTF8_OUTPUT_PREFIX = "try { [Console]::OutputEncoding=[System.Text.Encoding]::UTF8 } catch {}\n"
WINDOWS_POWERSHELL_EXIT_SUFFIX = (
    "\n;\nif ($?) { exit 0 }\n"
    'if (($LASTEXITCODE -eq 0) -and ("$($Error[0].FullyQualifiedErrorId)" -like '
    '"NativeCommandError*")) { exit 0 }\n'
    "exit 1"
)
"""Appended for Windows PowerShell 5.1: exit 0 when the last failure is only a redirected
native stderr record of a command that exited 0; the lone ``;`` keeps an unfinished last
statement a parse error."""


@dataclass(frozen=True)
class PowerShellLocator:
    """Finds the PowerShell executable the way Pi's ``getPowerShellConfig`` does.

    ``platform`` (default ``sys.platform``): anything but ``win32`` fails with
    :data:`NOT_WINDOWS_TEXT`. ``which(name) -> path | None`` (default ``shutil.which``),
    ``environ`` (``ProgramFiles``, ``SystemRoot``; default ``os.environ``) and
    ``exists(path)`` (default ``os.path.isfile``) are the lookups.
    """

    platform: str = field(default_factory=lambda: sys.platform)
    which: Callable[[str], str | None] = shutil.which
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    exists: Callable[[str], bool] = os.path.isfile

    def locate(self) -> str:
        """The executable's path; :class:`~pi_core.ToolError` with Pi's texts when off
        Windows or when none is found."""
        if self.platform != "win32":
            raise ToolError(NOT_WINDOWS_TEXT)
        found = self.which("pwsh.exe")
        program_files = self.environ.get("ProgramFiles")
        if not found and program_files:
            candidate = ntpath.join(program_files, "PowerShell", "7", "pwsh.exe")
            if self.exists(candidate):
                found = candidate
        if not found:
            found = self.which("powershell.exe")
        system_root = self.environ.get("SystemRoot")
        if not found and system_root:
            candidate = ntpath.join(
                system_root, "System32", "WindowsPowerShell", "v1.0", "powershell.exe"
            )
            if self.exists(candidate):
                found = candidate
        if not found:
            raise ToolError(NOT_FOUND_TEXT)
        return found


def powershell_command(executable: str, command: str) -> str:
    """``command`` as it is passed to ``-Command``: with :data:`UTF8_OUTPUT_PREFIX`, and
    :data:`WINDOWS_POWERSHELL_EXIT_SUFFIX` for ``powershell.exe`` unless it ends with a
    backtick."""
    is_windows_powershell = ntpath.basename(executable).lower() == "powershell.exe"
    suffix = (
        WINDOWS_POWERSHELL_EXIT_SUFFIX
        if is_windows_powershell and not command.endswith("`")
        else ""
    )
    return f"{UTF8_OUTPUT_PREFIX}{command}{suffix}"


def powershell_argv(executable: str, command: str) -> list[str]:
    """The argument vector of one call."""
    return [executable, *POWERSHELL_ARGS, powershell_command(executable, command)]


class LocalPowerShellOperations:
    """Runs PowerShell commands on this machine (a :class:`~pi_core.BashOperations`).

    ``locator``: where the executable comes from (:class:`PowerShellLocator`). Output (stdout
    and stderr in one pipe) streams to ``on_data``; stdin is empty. On POSIX the process starts
    in its own session and timeout or cancellation kill its process group (SIGKILL); on Windows
    ``taskkill /F /T`` ends the tree. ``drain_idle`` / ``drain_max``: how long output is still
    read after the shell exited.
    """

    def __init__(
        self,
        locator: PowerShellLocator | None = None,
        *,
        drain_idle: float = 0.1,
        drain_max: float = 1.0,
    ) -> None:
        self.locator = locator or PowerShellLocator()
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
        """Run ``command`` in ``cwd``; the exit code (``128 + N`` after signal ``N``).

        Errors: the locator's texts; ``Working directory does not exist: {cwd}\\nCannot
        execute PowerShell commands.``; :class:`~pi_core.CommandTimeout` after ``timeout``.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        executable = self.locator.locate()
        _check_cwd(cwd)
        windows = sys.platform == "win32"
        options: dict[str, Any] = (
            {"creationflags": getattr(subprocess, "CREATE_NO_WINDOW", 0)}
            if windows
            else {"start_new_session": True}
        )
        try:
            process = await trio.lowlevel.open_process(
                powershell_argv(executable, command),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                **options,
            )
        except OSError as exc:
            raise ToolError(f"spawn {executable} {exc.strerror or exc}") from None
        return await stream_process(
            process,
            on_data,
            timeout=timeout,
            kill=lambda: _kill_tree(process),
            drain_idle=self.drain_idle,
            drain_max=self.drain_max,
            settle=None,
            drain_after_timeout=True,
        )


def _check_cwd(cwd: str) -> None:
    if not os.path.isdir(cwd):
        raise ToolError(
            f"Working directory does not exist: {cwd}\nCannot execute PowerShell commands."
        )


async def _kill_tree(process: trio.Process) -> None:
    """End ``process`` and what it started (shielded)."""
    with trio.CancelScope(shield=True):
        if sys.platform == "win32":
            with contextlib.suppress(OSError):
                await trio.run_process(
                    ["taskkill", "/F", "/T", "/PID", str(process.pid)],
                    check=False,
                    capture_stdout=True,
                    capture_stderr=True,
                )
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def create_powershell_tool_definition(
    cwd: str,
    operations: BashOperations | None = None,
    *,
    locator: PowerShellLocator | None = None,
    spawn_hook: Callable[[BashSpawnContext], BashSpawnContext | None] | None = None,
    options: BashToolOptions | Mapping[str, Any] | None = None,
    env_policy: EnvPolicy | None = None,
    full_output_files: FullOutputFiles | None = None,
) -> ToolDefinition:
    """The ``powershell`` tool for ``cwd``: the shell core with :data:`POWERSHELL_SHELL`,
    inactive by default (``default_active=False``).

    Without ``operations`` it runs through :class:`LocalPowerShellOperations` with ``locator``
    (default :class:`PowerShellLocator`), which is consulted first in every call, so off
    Windows each call is :data:`NOT_WINDOWS_TEXT` before the timeout is looked at. With
    ``operations`` (a test double, another backend) no platform check is made. The other
    arguments are those of :func:`~pi_builtin_tools.shell.bash.create_bash_tool_definition`.
    """
    before_call: Callable[[], object] | None = None
    if operations is None:
        local = LocalPowerShellOperations(locator)
        operations = local
        before_call = local.locator.locate
    definition = create_shell_tool_definition(
        cwd,
        operations,
        POWERSHELL_SHELL,
        spawn_hook=spawn_hook,
        options=options,
        env_policy=env_policy,
        full_output_files=full_output_files,
        before_call=before_call,
    )
    definition.default_active = False
    return definition


__all__ = [
    "NOT_FOUND_TEXT",
    "NOT_WINDOWS_TEXT",
    "POWERSHELL_ARGS",
    "POWERSHELL_SHELL",
    "UTF8_OUTPUT_PREFIX",
    "WINDOWS_POWERSHELL_EXIT_SUFFIX",
    "LocalPowerShellOperations",
    "PowerShellLocator",
    "create_powershell_tool_definition",
    "powershell_argv",
    "powershell_command",
]
