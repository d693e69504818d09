"""``pi run --session FILE``: a Pi session file, version 3 (a tree of entries with ``id`` and
``parentId``), as Pi's ``SessionManager`` writes it; ``pi replay`` reads it back through
:mod:`pi_core._wire.session_files`.

Lines, each one compact JSON object, appended and flushed as the run goes::

    {"type":"session","version":3,"id":UUID,"timestamp":ISO,"cwd":"/abs/cwd"}
    {"type":"model_change","id":ID8,"parentId":null,"timestamp":ISO,"provider":"scripted","modelId":"..."}
    {"type":"message","id":ID8,"parentId":<previous id>,"timestamp":ISO,"message":{...}}
    {"type":"custom","id":ID8,"parentId":...,"timestamp":ISO,"customType":"...","data":...}
    ...

A ``custom`` entry is what a tool appended through ``SessionContext.append_entry`` (codemode's
``store()`` writes), written when it is appended.

Every entry is the child of the one before (one branch); ``ID8`` is 8 hex digits, unique in the
file; timestamps are UTC ISO 8601 with milliseconds (``2026-11-30T03:10:00.000Z``).
"""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import IO, Any

from pi_core._cli.output import json_text
from pi_core._wire.session_files import SESSION_VERSION


def iso_now() -> str:
    """The current UTC time as Pi writes it: ``2026-11-30T03:10:00.123Z``."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def open_session_file(path: str) -> IO[str]:
    """``--session FILE`` created for writing. An existing FILE is never overwritten (a Pi user
    may expect ``--session`` to continue it): ``--session FILE: already exists; pi writes a new
    session file and never overwrites one``. A path pi cannot write (a missing folder, a
    folder, a file as folder, no permission) is a :class:`~pi_core._cli.parser.UsageError`
    ``--session FILE: cannot write: REASON``."""
    from pi_core._cli.parser import UsageError

    try:
        return Path(path).open("x", encoding="utf-8")
    except FileExistsError:
        if Path(path).is_dir():
            raise UsageError(f"--session {path}: cannot write: Is a directory") from None
        raise UsageError(
            f"--session {path}: already exists; pi writes a new session file and never "
            "overwrites one"
        ) from None
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise UsageError(f"--session {path}: cannot write: {reason}") from None


class SessionWriter:
    """Appends a v3 session to ``path`` (created, or truncated when it exists) or to the open
    ``file`` (from :func:`open_session_file`).

    :meth:`header` is the header object (also what ``pi run --json`` prints first)."""

    def __init__(self, path: str | Path | None, cwd: str, *, file: IO[str] | None = None) -> None:
        self.session_id = str(uuid.uuid4())
        self._header = {
            "type": "session",
            "version": SESSION_VERSION,
            "id": self.session_id,
            "timestamp": iso_now(),
            "cwd": cwd,
        }
        self._ids: set[str] = set()
        self._leaf: str | None = None
        self._file: IO[str] | None = file
        if file is None and path is not None:
            self._file = Path(path).open("w", encoding="utf-8")
        if self._file is not None:
            self._write(self._header)

    @property
    def header(self) -> dict[str, Any]:
        """``{"type": "session", "version": 3, "id", "timestamp", "cwd"}``."""
        return dict(self._header)

    def _new_id(self) -> str:
        while True:
            value = uuid.uuid4().hex[:8]
            if value not in self._ids:
                self._ids.add(value)
                return value

    def _append(self, entry: dict[str, Any]) -> None:
        entry_id = self._new_id()
        full = {"type": entry.pop("type"), "id": entry_id, "parentId": self._leaf}
        full["timestamp"] = iso_now()
        full.update(entry)
        self._leaf = entry_id
        self._write(full)

    def _write(self, obj: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json_text(obj) + "\n")
            self._file.flush()

    def model_change(self, provider: str, model_id: str) -> None:
        """``{"type": "model_change", ..., "provider", "modelId"}``."""
        self._append({"type": "model_change", "provider": provider, "modelId": model_id})

    def message(self, message: Any) -> None:
        """``{"type": "message", ..., "message": <the message's wire JSON>}``."""
        self._append({"type": "message", "message": message.to_json_dict()})

    def custom(self, entry: dict[str, Any]) -> None:
        """``{"type": "custom", ..., "customType", "data"}``: a tool's entry
        (:meth:`pi_core.SessionContext.append_entry`)."""
        self._append(
            {"type": "custom", "customType": entry["customType"], "data": entry.get("data")}
        )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["SESSION_VERSION", "SessionWriter", "iso_now", "open_session_file"]
