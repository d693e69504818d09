"""The audit log: one JSON line per policy decision, appended to a file.

A session has an audit log when its host was given one (``pi call|run|replay --audit FILE``,
``build_session(audit=...)``) or a plugin opened one at set-up (the sandbox's
``[sandbox.audit] path``). :class:`~pi_core._plugins.facade.PluginHooks` writes it: for every
tool call one line for the **before** phase (what ``pi_before_tool_call`` and
``pi_approve_tool_call`` decided: ``allow`` or ``deny``, the deciding ``source``, the ``reason``,
the ``approval`` when a person was asked) and one line per **after**-phase decision (an
``AfterToolCallResult`` naming a ``source``). Fields, in this order::

    {"time": "2026-12-01T21:30:00.123Z", "session": "…", "tool_call_id": "…",
     "parent_tool_call_id": null, "tool": "bash", "arguments": {…}, "phase": "before",
     "decision": "deny", "source": "codex rule .codex/rules/default.rules:3",
     "reason": "…", "approval": {…}, "detail": {…}, "latency_ms": 0.42}

``approval`` and ``detail`` appear only when there is one, ``torn_line_bytes`` (last) only on the
line after a torn one. ``arguments`` are capped (:func:`cap_arguments`): no line exceeds
:data:`MAX_LINE_BYTES`.

Every decision is written before the call goes on: :meth:`AuditLog.record` writes its line with
one ``write`` on a file opened with ``O_APPEND`` (in a worker thread, so the event loop never
waits for the disk) and returns only then. Lines of several processes never interleave, and never
join: under an exclusive ``flock`` the writer looks at the file's last byte first, and when it is
not a newline (a line torn by a crash, a power cut, or a write the disk cut short) the entry starts
with the newline that closes it off and carries ``"torn_line_bytes": N`` (the torn line's size),
so every later line is whole JSON on its own line (the torn line itself is left as it is: an audit
log is only ever appended to). A write that writes only part of the line is an
error (the rest is never written after it: another process may have appended meanwhile).

A decision that cannot be written (a full disk, an I/O error) is reported to the caller
(:meth:`record` returns the reason): with ``on_error = "deny"`` (the default) the facade refuses
the call it decided, with ``"allow"`` the call goes on. Either way ``pi: audit log PATH: REASON``
is printed on stderr once.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import sys
import threading
from typing import Any

import trio

MAX_LINE_BYTES = 16 * 1024
"""The longest line written (the arguments are shortened to fit)."""

MAX_STRING_CHARS = 1024
"""A string in the logged arguments longer than this is cut (``…[+N chars]`` says how much)."""

ON_ERROR = ("deny", "allow")
"""What a decision gets when its line cannot be written: refused (``deny``) or let through."""

TORN_SCAN_BYTES = 4 * MAX_LINE_BYTES
"""How far back from the end a torn line's start is looked for (its size is at most this)."""


class AuditWriteError(OSError):
    """A line was written only in part (``write`` returned fewer bytes than the line's)."""


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        if len(value) > limit:
            return f"{value[:limit]}…[+{len(value) - limit} chars]"
        return value
    if isinstance(value, dict):
        return {str(k): _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut_strings(v, limit) for v in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def cap_arguments(arguments: Any, budget: int = MAX_LINE_BYTES // 2) -> Any:
    """``arguments`` as logged: unchanged when their JSON fits in ``budget`` bytes; else with
    every string over :data:`MAX_STRING_CHARS` cut; else ``{"truncated": PREFIX}`` holding the
    first ``budget`` characters of their JSON."""
    try:
        text = _dumps(arguments)
    except (TypeError, ValueError, RecursionError):
        return {"unserialisable": repr(arguments)[:budget]}
    if len(text.encode()) <= budget:
        return arguments
    cut = _cut_strings(arguments, MAX_STRING_CHARS)
    if len(_dumps(cut).encode()) <= budget:
        return cut
    return {"truncated": text[:budget]}


def utc_now() -> str:
    """Now as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class AuditLog:
    """An append-only JSON-lines file of decisions (see the module docstring).

    ``AuditLog(path, on_error="deny")`` opens (creating, mode 0600) ``path`` for appending; an
    ``OSError`` propagates (the host reports it). :meth:`record` writes one line and returns
    ``None``, or the reason it could not; :meth:`aclose` (or :meth:`close`) closes the file.
    ``on_error`` (``"deny"`` or ``"allow"``) is what the caller does with a decision that could
    not be written.
    """

    def __init__(self, path: str | os.PathLike[str], *, on_error: str = "deny") -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be 'deny' or 'allow', not {on_error!r}")
        self.path = os.fspath(path)
        self.on_error = on_error
        flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:  # read access lets the writer see a torn last line; without it, lines only
            self._fd = os.open(self.path, os.O_RDWR | flags, 0o600)
            self._readable = True
        except PermissionError:
            self._fd = os.open(self.path, os.O_WRONLY | flags, 0o600)
            self._readable = False
        self._lock = threading.Lock()  # one writer thread at a time (flock is per open file)
        self._reported = False
        self._closed = False

    @staticmethod
    def check_path(path: str | os.PathLike[str], cwd: str = ".") -> None:
        """Check before a session starts that ``path`` (relative to ``cwd``, ``~`` expanded) can
        be an audit log: a regular file pi can append to, created (mode 0600) if missing.
        Raises ``ValueError`` with the reason (``not a regular file``, or the ``OSError``'s
        ``strerror``: ``Permission denied``); a host words it as its own usage error."""
        full = os.path.join(cwd, os.path.expanduser(os.fspath(path)))
        if os.path.exists(full) and not os.path.isfile(full):
            raise ValueError("not a regular file")
        try:
            os.close(os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600))
        except OSError as e:
            raise ValueError(e.strerror or str(e)) from None

    @staticmethod
    def line(entry: dict[str, Any]) -> str:
        """``entry`` as one JSON line (ends with ``\\n``), at most :data:`MAX_LINE_BYTES`: an
        over-long entry keeps its fields with ``arguments`` cut, then ``reason`` cut."""
        text = _dumps(entry)
        if len(text.encode()) > MAX_LINE_BYTES:
            entry = dict(entry)
            entry["arguments"] = cap_arguments(entry.get("arguments"), MAX_LINE_BYTES // 4)
            for key in ("reason", "detail"):
                if len(_dumps(entry).encode()) > MAX_LINE_BYTES and key in entry:
                    entry[key] = cap_arguments(entry[key], MAX_LINE_BYTES // 4)
            text = _dumps(entry)
        return text + "\n"

    def _torn_line_bytes(self) -> int:
        """The size of the torn line the file ends with (no final newline), else 0."""
        if not self._readable:
            return 0
        size = os.fstat(self._fd).st_size
        if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n":
            return 0
        scan = min(size, TORN_SCAN_BYTES)
        tail = os.pread(self._fd, scan, size - scan)
        return scan - (tail.rfind(b"\n") + 1)

    def _write_line(self, entry: dict[str, Any], text: str | None = None) -> None:
        """Write ``entry`` (``text``: its :meth:`line`, if already made) as one line, blocking;
        raises ``OSError`` (:class:`AuditWriteError` for a partial write)."""
        with self._lock:
            if self._closed:
                raise OSError(errno.EBADF, "the audit log is closed")
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                locked = True
            except OSError:  # a file system without locks: lines are still whole
                locked = False
            try:
                torn = self._torn_line_bytes()
                if torn:
                    text = "\n" + self.line({**entry, "torn_line_bytes": torn})
                data = (text if text is not None else self.line(entry)).encode("utf-8", "replace")
                written = os.write(self._fd, data)
                if written != len(data):
                    raise AuditWriteError(
                        errno.EIO, f"only {written} of {len(data)} bytes of the line were written"
                    )
            finally:
                if locked:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    async def record(self, entry: dict[str, Any]) -> str | None:
        """Write ``entry`` (a JSON-ready dict) as one line before returning: ``None`` when it
        is written, else the reason it is not (``No space left on device``; ``the audit log is
        closed`` after :meth:`close`), which is also printed once on stderr."""
        text = self.line(entry)
        try:
            await trio.to_thread.run_sync(self._write_line, entry, text)
        except OSError as e:
            reason = e.strerror or str(e)
            if not self._reported:
                self._reported = True
                print(f"pi: audit log {self.path}: {reason}", file=sys.stderr)
            return reason
        return None

    def refusal(self, reason: str, what: str) -> str:
        """The text of a call refused because its decision (``what``: ``the decision to allow
        this call``) could not be written: ``Blocked: the audit log PATH could not record WHAT:
        REASON``."""
        return f"Blocked: the audit log {self.path} could not record {what}: {reason}"

    def close(self) -> None:
        """Close the file (once); a line being written is finished first."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            os.close(self._fd)

    async def aclose(self) -> None:
        """:meth:`close` off the event loop, shielded from cancellation."""
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self.close)


__all__ = ["MAX_LINE_BYTES", "ON_ERROR", "AuditLog", "AuditWriteError", "cap_arguments", "utc_now"]
