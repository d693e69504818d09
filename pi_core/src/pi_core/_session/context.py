"""One session, from ``pi_session_start`` to ``pi_session_end``: :class:`SessionContext`.

The ``session`` of every hook context, of a tool call's before and after contexts and of a tool's
execute context. Add fields freely: readers use only what they need.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pi_core._session.approval import ApprovalState, Approver
from pi_core._session.audit import AuditLog

SESSION_HOSTS = ("call", "replay", "run", "tools", "agent", "mcp")
"""The hosts pi itself runs sessions in: ``pi call``, ``pi replay`` (also ``--verify``),
``pi run``, ``pi tools``, the Python API (:class:`~pi_core.Agent`, or a program's own use of
:func:`~pi_core.build_session`) and ``pi mcp serve`` (one session per MCP session)."""

CONFIGURATION = "pi's own configuration"
"""What :class:`ProtectedFile` says of the config file pi loaded."""

AUDIT_LOG = "pi's audit log"
"""What :class:`ProtectedFile` says of the session's audit log (hidden: it holds the arguments
of every call of every session that writes it)."""

SESSION_FILE = "pi's session file"
"""What :class:`ProtectedFile` says of the session file ``pi run --session`` writes."""

CHECKPOINTS = "pi's checkpoint store"
"""What :class:`ProtectedFile` says of the checkpoint directory (hidden: it keeps earlier
versions of the workspace's files, denied ones' included)."""

SESSION_END_REASONS = ("completed", "error", "aborted", "interrupted")
"""What ``SessionContext.reason`` says when ``pi_session_end`` fires."""


def _new_session_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class ProtectedFile:
    """One of pi's own files that the agent must not change (:meth:`SessionContext.protect`):
    ``path`` (absolute, symlinks resolved when it was protected), ``what`` it is, as the refusal
    names it (``"pi's own configuration"``), and whether it is ``hidden`` (not readable either:
    the audit log) or only read-only."""

    path: str
    what: str
    hidden: bool = False


@dataclass
class SessionContext:
    """One session, from ``pi_session_start`` to ``pi_session_end`` (the same object for both,
    and the ``session`` field of every other context of that session).

    * ``cwd``: the session's working directory (absolute); ``config``: the loaded config (the
      TOML as a dict, ``{}`` without one).
    * ``host``: which host runs the session (:data:`SESSION_HOSTS`: ``"call"``, ``"replay"``,
      ``"run"``, ``"tools"``, ``"agent"``, ``"mcp"``).
    * ``session_id``: unique per session (32 hex digits).
    * ``state``: a dict for plugins' per-session state; each plugin keeps its own entries under
      its name (the sandbox uses ``state["sandbox"]``). It lives exactly as long as the session.
    * ``reason``: ``None`` until the session ends; then one of :data:`SESSION_END_REASONS`:
      ``"completed"`` (the host finished, whatever its tool results), ``"error"`` (an exception
      ended it, or the model call failed: ``error`` holds the exception when there is one),
      ``"aborted"`` (``Agent.abort()`` or cancellation), ``"interrupted"`` (Ctrl-C).
    * ``tools``: the session's :class:`~pi_core.ToolSet` (registered, active and callable
      tools; ``None`` until the tools are registered). A tool reaches it from its execute
      context (``ctx.session.tools``): ``tool_search`` activates the tools it finds with
      ``ctx.session.tools.activate([...])``.
    * ``entries``: the session's custom entries (``{"type": "custom", "customType": ...,
      "data": ...}``, as in a Pi session file), in order: those of the session it continues
      (its host puts them here before any tool runs), then those :meth:`append_entry` added.
    * ``entry_sink``: set by a host that writes a session file (``pi run --session``): called
      with each entry :meth:`append_entry` adds; ``None``: the entries are kept in memory only.
    * ``approvals``: who answers :func:`~pi_core.request_approval` (``approvals.approver``,
      set by the host or with :meth:`set_approver`) and the answers remembered as "always".
    * ``audit``: the session's :class:`~pi_core.AuditLog` (``None``: decisions are not
      logged); the host sets it (``--audit``) or a plugin at set-up (:meth:`open_audit`); it is
      closed when the session ends.
    * ``protected_files``: pi's own files the agent must not change, by path
      (:class:`ProtectedFile`; :meth:`protect` adds one): the config file pi loaded
      (:func:`~pi_core.build_session` adds it), the audit log (:meth:`open_audit`), the session
      file ``pi run --session`` writes, and what plugins load (the sandbox adds its Codex rules
      files, Claude Code settings files and the hook scripts they name). pi itself does not
      restrict the agent: a policy plugin enforces it (the sandbox refuses the file tools'
      writes and mounts them read-only for sandboxed commands). It is read at each operation,
      so a file protected after the backends were built is protected too.
    """

    cwd: str
    config: dict[str, Any] = field(default_factory=dict)
    host: str = "agent"
    session_id: str = field(default_factory=_new_session_id)
    state: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    error: BaseException | None = None
    tools: Any = field(default=None, repr=False)
    entries: list[dict[str, Any]] = field(default_factory=list, repr=False)
    entry_sink: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False)
    approvals: ApprovalState = field(default_factory=ApprovalState, repr=False)
    audit: AuditLog | None = field(default=None, repr=False)
    protected_files: dict[str, ProtectedFile] = field(default_factory=dict, repr=False)

    def protect(
        self, path: str | os.PathLike[str], what: str, *, hidden: bool = False
    ) -> ProtectedFile:
        """Add ``path`` (relative to :attr:`cwd`, ``~`` expanded, symlinks resolved) to
        :attr:`protected_files`: ``what`` names it in the refusal (``"pi's audit log"``);
        ``hidden`` also keeps it from being read. Protecting a path again keeps the strictest
        (hidden wins). Returns the entry."""
        real = os.path.realpath(os.path.join(self.cwd, os.path.expanduser(os.fspath(path))))
        known = self.protected_files.get(real)
        entry = ProtectedFile(real, what, hidden)
        if known is not None and (known.hidden or not hidden):
            return known
        self.protected_files[real] = entry
        return entry

    def set_approver(self, approver: Approver | None, *, replace: bool = True) -> bool:
        """Make ``approver`` answer this session's approval requests; with ``replace=False``
        only when none is set (a plugin's default never overrides the host's terminal or
        callback). Returns whether it was set."""
        if not replace and self.approvals.approver is not None:
            return False
        self.approvals.approver = approver
        return True

    def open_audit(
        self, path: str | os.PathLike[str], *, replace: bool = False, on_error: str = "deny"
    ) -> bool:
        """Open the audit log ``path`` (relative to :attr:`cwd`) for this session unless one is
        open already (``replace=True`` closes that one first); ``on_error``: what a call whose
        decision cannot be written gets (``"deny"`` or ``"allow"``). Returns whether it was
        opened; an ``OSError`` (a directory that does not exist, no permission) propagates."""
        if self.audit is not None:
            if not replace:
                return False
            self.audit.close()
        full = os.path.join(self.cwd, os.path.expanduser(os.fspath(path)))
        self.audit = AuditLog(full, on_error=on_error)
        self.protect(path, AUDIT_LOG, hidden=True)
        return True

    def append_entry(self, custom_type: str, data: Any) -> None:
        """Append a custom entry ``{"type": "custom", "customType": custom_type, "data":
        data}`` to the session (``data``: JSON-serialisable): kept in :attr:`entries` and
        written to the session file when the host writes one (:attr:`entry_sink`). A tool's
        state that must outlive the process goes here (codemode's ``store()`` writes); the
        tool reads it back from :attr:`entries` when the session is continued."""
        entry = {"type": "custom", "customType": custom_type, "data": data}
        self.entries.append(entry)
        if self.entry_sink is not None:
            self.entry_sink(dict(entry))


__all__ = [
    "AUDIT_LOG",
    "CHECKPOINTS",
    "CONFIGURATION",
    "SESSION_END_REASONS",
    "SESSION_FILE",
    "SESSION_HOSTS",
    "ProtectedFile",
    "SessionContext",
]
