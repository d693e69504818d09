"""The exception hierarchy of pi.

::

    PiError
    ├── ConfigError            a config file or value pi cannot use (names file, line or key)
    ├── PluginError            a plugin failed to load, misspelled a hook, or took a tool name
    ├── ToolError              raised by a tool: its message becomes an error tool result
    │   └── CommandTimeout     a backend's command ran past its timeout
    └── ProviderError          a model provider failed (HTTP error, bad stream)
    ToolAborted (BaseException-free: an Exception) carries a partial result on abort
    ConfigWarning (a UserWarning): a config value pi does not use (``pi`` prints ``pi: warning:``)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_core._wire.messages import AgentToolResult


class PiError(Exception):
    """Base of every error pi raises on purpose."""


class ConfigError(PiError):
    """A configuration file or value pi cannot use; the message names the file and line or key."""


class ConfigWarning(UserWarning):
    """A configuration value pi loads but does not use, such as a ``[tools.NAME]`` table for a
    tool no plugin registered (a misspelt name, a plugin not installed). ``pi`` prints it on
    stderr as ``pi: warning: MESSAGE`` and goes on; under ``-W error`` (pytest's
    ``filterwarnings = error``) it is an error."""


class PluginError(PiError):
    """A plugin failed to load, implements an unknown hook, or registers a taken tool name."""


class ToolError(PiError):
    """Raised inside ``execute``: the loop turns its message into an error tool result."""


class CommandTimeout(ToolError):
    """``BashOperations.exec`` ran past ``timeout`` seconds; the process tree is already killed.

    ``timeout`` is the limit in seconds.
    """

    def __init__(self, timeout: float, message: str | None = None) -> None:
        self.timeout = timeout
        super().__init__(message or f"timeout:{timeout}")


class ToolAborted(PiError):
    """Raised by a tool whose call was cancelled and that has something to report.

    ``partial_result`` (an :class:`~pi_core._wire.messages.AgentToolResult`) becomes the error tool
    result of the call instead of the generic ``Operation aborted``.
    """

    def __init__(self, partial_result: AgentToolResult) -> None:
        self.partial_result = partial_result
        super().__init__(partial_result.text or "Operation aborted")


class ProviderError(PiError):
    """A model provider could not produce an assistant message."""


def missing_cwd_error(cwd: str) -> ToolError:
    """The error a ``BashOperations.exec`` raises when ``cwd`` is not a directory it can run
    in (Pi's text): ``Working directory does not exist: {cwd}\nCannot execute bash
    commands.``"""
    return ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")


__all__ = [
    "CommandTimeout",
    "ConfigError",
    "PiError",
    "PluginError",
    "ProviderError",
    "ToolAborted",
    "ToolError",
    "missing_cwd_error",
]
