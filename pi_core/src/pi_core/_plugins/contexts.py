"""Objects the plugin hooks receive: the registration, backend, bash-spawn and command contexts.

The session (:class:`~pi_core._session.context.SessionContext`) belongs to the session's state,
the contexts of a tool call (before and after hooks) to the pipeline
(:mod:`pi_core._pipeline.contexts`). Add fields freely: implementations read only what they use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pi_core._session.context import SessionContext

if TYPE_CHECKING:
    from pi_core._backend_kit.operations import BashOperations, FileOperations


@dataclass
class RegisterToolsContext:
    """What ``pi_register_tools`` gets: the session ``cwd``, the loaded ``config`` (a dict of the
    TOML file, ``{}`` without one), the backends chosen by ``pi_bash_operations`` and
    ``pi_file_operations`` (``None`` when no plugin provides one) and ``bash_spawn_hook``."""

    cwd: str
    config: dict[str, Any] = field(default_factory=dict)
    bash_operations: BashOperations | None = None
    file_operations: FileOperations | None = None
    bash_spawn_hook: Callable[[BashSpawnContext], BashSpawnContext] | None = None
    """The ``pi_bash_spawn_context`` chain, for the bash tool to apply before each command."""
    session: SessionContext | None = None
    """The session being built (``None`` when a program calls the hook without one)."""


@dataclass
class BackendContext:
    """What ``pi_bash_operations`` and ``pi_file_operations`` get: ``cwd``, ``config`` and the
    ``session`` being built (``None`` when a program calls the hook without one): a backend
    that holds resources keeps them in ``session.state`` and releases them in
    ``pi_session_end``."""

    cwd: str
    config: dict[str, Any] = field(default_factory=dict)
    session: SessionContext | None = None


@dataclass
class NetworkRequestContext:
    """What ``pi_network_request`` gets: one connection a sandboxed command attempts through
    the sandbox's network proxy: ``host`` (normalised: lower case, IDNA ASCII form; an IP
    address's text), ``port``, ``protocol`` (``"http"``: a plain-HTTP request, ``"https"``: a
    ``CONNECT`` tunnel, ``"socks5_tcp"``), ``tool_call_id`` (the call whose command connects;
    ``None`` when unknown) and the ``session``."""

    host: str
    port: int
    protocol: str
    tool_call_id: str | None = None
    session: SessionContext | None = None


@dataclass(frozen=True)
class NetworkDecision:
    """What a ``pi_network_request`` implementation returns: ``decision`` (``"allow"``,
    ``"deny"``, or ``"ask"``: the session's approval path decides) and a ``reason`` (shown in
    the refusal and the audit log)."""

    decision: Literal["allow", "deny", "ask"]
    reason: str = ""


@dataclass
class BashSpawnContext:
    """What ``pi_bash_spawn_context`` gets and may return changed: ``command``, ``cwd``, ``env``."""

    command: str
    cwd: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class CommandInvocation:
    """What a plugin command's ``run`` gets: the parsed ``args`` (``argparse.Namespace``), the
    loaded ``config`` (the TOML as a dict, ``{}`` without a file), ``config_path`` (the file it
    came from, or ``None``) and the ``stdout``/``stderr`` streams to write to; ``stdin`` is the
    standard input ``pi`` started with (binary; ``None``: the process's own), which the console
    script keeps aside when it points file descriptor 0 at ``/dev/null`` (``pi mcp serve``
    reads its protocol from it)."""

    args: Any
    config: dict[str, Any]
    config_path: str | None
    stdout: Any
    stderr: Any
    stdin: Any = None


@dataclass
class PluginCommand:
    """A subcommand of ``pi`` registered through ``pi_register_commands``.

    ``name`` is the word after ``pi``; ``help`` the one-line description; ``configure(parser)``
    adds the command's arguments to its ``argparse`` parser; ``run(invocation)`` runs it and
    returns the exit status (0 success, 1 a negative answer such as a denied command). Raising
    :class:`~pi_core._errors.PiError` gives ``pi: error: ...`` and exit 2.
    """

    name: str
    help: str
    configure: Callable[[Any], None]
    run: Callable[[CommandInvocation], int]


__all__ = [
    "BackendContext",
    "BashSpawnContext",
    "CommandInvocation",
    "PluginCommand",
    "RegisterToolsContext",
]
