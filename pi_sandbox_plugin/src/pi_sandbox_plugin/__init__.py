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

The code lives in one sub-package per concern: ``policies`` (command and path policies, grammars,
the bash parser, guarded files), ``backends`` (bwrap, ssh, container, Ray, their wiring),
``interop`` (Claude Code hooks, Codex rules, policy sources), ``settings`` (the ``[sandbox]``
table) and ``cli`` (``pi policy``). The modules' former flat paths
(``pi_sandbox_plugin.command_policy``, ``pi_sandbox_plugin.grammars``, ...) import the same
modules as their rooms (``pi_sandbox_plugin.policies.command_policy``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_core import lazy_door

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
(:func:`pi_core.lazy_door`): loading the plugin (:mod:`pi_sandbox_plugin.plugin`) imports this
package, and a session without ``[sandbox]`` needs none of the policy modules (the bash parser,
pathspec, pydantic models), which are most of the plugin's import time."""

_MOVED = {
    "command_policy": "policies.command_policy",
    "path_policy": "policies.path_policy",
    "grammars": "policies.grammars",
    "bash_parser": "policies.bash_parser",
    "guarded_files": "policies.guarded_files",
    "shell_files": "backends.shell_files",
    "bwrap_backend": "backends.bwrap",
    "ssh_backend": "backends.ssh",
    "container_backend": "backends.container",
    "ray_backend": "backends.ray",
    "backend_errors": "backends.errors",
    "claude_hooks": "interop.claude_hooks",
    "codex_rules": "interop.codex_rules",
    "policy_sources": "interop.policy_sources",
    "config": "settings.config",
    "commands": "cli.commands",
    "policy_cli": "cli.policy_check",
}
"""Each module's former flat path → its room: ``import pi_sandbox_plugin.grammars`` imports
:mod:`pi_sandbox_plugin.policies.grammars`, the same module object. (``pi_sandbox_plugin.backends``
is now the ``backends`` room; the session wiring is :mod:`pi_sandbox_plugin.backends.wiring`.)"""

__getattr__, __dir__ = lazy_door(__name__, _SOURCES, moved=_MOVED)

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
