"""pi's sandbox plugin (``docs/how-to/sandbox.md``): command and path policies that block
tool calls, and bash/file backends on bubblewrap, SSH and containers.

Loaded through the ``pi`` entry point ``sandbox`` (:mod:`pi_sandbox_plugin.plugin`), it
implements ``pi_before_tool_call`` (the command policy for ``bash``, the path policy for read,
write, edit, ls, find and grep), ``pi_bash_operations`` and ``pi_file_operations`` (the
``[sandbox] backend``), ``pi_register_tools`` (validates ``[sandbox]`` at session set-up) and
``pi_register_commands`` (``pi policy check``). Everything is configured in ``pi.toml`` under
``[sandbox]`` (:func:`load_sandbox_config`); without that table every hook returns ``None`` and
the plugin changes nothing.

Public names:

* :class:`CommandPolicy` (with :class:`Decision`): argv-prefix rules over every simple command
  a real bash parser finds; fails closed.
* :class:`PathPolicy` and :class:`GuardedFileOperations` (raises :class:`PathDenied`): read/write
  roots and denied globs, checked on the realpath at each operation.
* :class:`BwrapBackend`, :class:`SshConnection` with :class:`SshBashOperations` and
  :class:`SshFileOperations`, :class:`ContainerBackend`: the backends (each a
  ``BashOperations`` and a ``FileOperations``); :class:`SandboxUnavailable` when a sandbox
  cannot start.
* :func:`load_sandbox_config` (→ :class:`SandboxConfig` or ``None``; ``ConfigError`` naming
  file, key and problem).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_sandbox_plugin.backends.bwrap import BwrapBackend
    from pi_sandbox_plugin.backends.container import ContainerBackend
    from pi_sandbox_plugin.backends.errors import SandboxUnavailable
    from pi_sandbox_plugin.backends.ssh import SshBashOperations, SshConnection, SshFileOperations
    from pi_sandbox_plugin.policies.command_policy import CommandPolicy, Decision
    from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations, PathDenied
    from pi_sandbox_plugin.policies.path_policy import PathPolicy
    from pi_sandbox_plugin.settings.config import SandboxConfig, load_sandbox_config

_SOURCES = {
    "BwrapBackend": "backends.bwrap",
    "CommandPolicy": "policies.command_policy",
    "ContainerBackend": "backends.container",
    "Decision": "policies.command_policy",
    "GuardedFileOperations": "policies.guarded_files",
    "PathDenied": "policies.guarded_files",
    "PathPolicy": "policies.path_policy",
    "SandboxConfig": "settings.config",
    "SandboxUnavailable": "backends.errors",
    "SshBashOperations": "backends.ssh",
    "SshConnection": "backends.ssh",
    "SshFileOperations": "backends.ssh",
    "load_sandbox_config": "settings.config",
}
"""Each public name and the module that defines it. The names are imported on first access
(:func:`__getattr__`): loading the plugin (:mod:`pi_sandbox_plugin.plugin`) imports this package,
and a session without ``[sandbox]`` needs none of the policy modules (the bash parser, pathspec,
pydantic models), which are most of the plugin's import time."""


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SOURCES})


__all__ = [
    "BwrapBackend",
    "CommandPolicy",
    "ContainerBackend",
    "Decision",
    "GuardedFileOperations",
    "PathDenied",
    "PathPolicy",
    "SandboxConfig",
    "SandboxUnavailable",
    "SshBashOperations",
    "SshConnection",
    "SshFileOperations",
    "load_sandbox_config",
]
