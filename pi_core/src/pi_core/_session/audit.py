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

``approval`` and ``detail`` appear only when there is one. ``arguments`` are capped
(:func:`cap_arguments`): no line exceeds :data:`MAX_LINE_BYTES`.

Writing never waits for the disk: lines go to a bounded queue that a writer thread drains with
one ``write`` per line on a file opened with ``O_APPEND`` (so lines of several processes never
interleave). Only when :data:`QUEUE_LINES` lines are waiting does a call wait for the disk.
Closing the log (at the end of the session) writes every queued line first.
"""

from __future__ import annotations

import datetime
import json
import os
import queue
import sys
import threading
from typing import Any

import trio

MAX_LINE_BYTES = 16 * 1024
"""The longest line written (the arguments are shortened to fit)."""

MAX_STRING_CHARS = 1024
"""A string in the logged arguments longer than this is cut (``…[+N chars]`` says how much)."""

QUEUE_LINES = 4096
"""Lines waiting for the disk before a new decision waits for the writer."""

_CLOSE = object()


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

    ``AuditLog(path)`` opens (creating, mode 0600) ``path`` for appending; an ``OSError``
    propagates (the host reports it). :meth:`record` queues one line; :meth:`aclose` (or
    :meth:`close`) writes what is queued and closes the file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_LINES)
        self._failed = False
        self._closed = False
        self._thread = threading.Thread(target=self._drain, name="pi-audit", daemon=True)
        self._thread.start()

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

    def _drain(self) -> None:
        while True:
            line = self._queue.get()
            if line is _CLOSE:
                return
            data = line.encode("utf-8", "replace")
            try:
                while data:
                    written = os.write(self._fd, data)
                    data = data[written:]
            except OSError as e:
                if not self._failed:
                    self._failed = True
                    print(f"pi: audit log {self.path}: {e.strerror or e}", file=sys.stderr)

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

    async def record(self, entry: dict[str, Any]) -> None:
        """Queue ``entry`` (a JSON-ready dict) as one line; waits only when
        :data:`QUEUE_LINES` lines are already waiting. Nothing after :meth:`close`."""
        if self._closed:
            return
        text = self.line(entry)
        try:
            self._queue.put_nowait(text)
        except queue.Full:
            await trio.to_thread.run_sync(self._queue.put, text)

    def close(self) -> None:
        """Write every queued line, stop the writer and close the file (once)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_CLOSE)
        self._thread.join()
        os.close(self._fd)

    async def aclose(self) -> None:
        """:meth:`close` off the event loop, shielded from cancellation."""
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self.close)


__all__ = ["MAX_LINE_BYTES", "AuditLog", "cap_arguments", "utc_now"]
