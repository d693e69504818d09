"""Reading Pi session files and message JSONL into wire models (``pi replay``).

Three line-oriented formats are accepted, each one JSON object a line (blank lines skipped):

* **Message JSONL**: one message a line (``{"role": "assistant", "content": [...], ...}``),
  as ``../conformance`` and ``../cases`` write replay files.
* **Pi session v1** (flat): a header ``{"type": "session", "id", "cwd", ...}`` then entries
  ``{"type": "message", "timestamp", "message": {...}}`` and others (``model_change``,
  ``thinking_level_change``, ``compaction``, ...). Every message entry counts, in file order.
* **Pi session v2/v3** (tree): the header carries ``"version"``; every entry has ``id`` and
  ``parentId``. The active branch is the path from the root to the **last** entry of the file
  (the current leaf); only its message entries count, root first.

Entries other than ``message`` (``custom_message``, ``custom``, ``compaction``, ...) are kept in
:attr:`SessionFile.entries` but give no messages. A message line parses into
:data:`~pi_core._wire.messages.AgentMessage` models and serialises back (``to_json_dict
(exclude_unset=True)``) to the same JSON object.

Errors are :class:`SessionFileError`: one line naming the file and line
(``replay.jsonl:3: invalid JSON: Expecting value (column 1)``).

Memory is bounded whatever the input (``/dev/zero``, a FIFO that never ends): lines are read one
at a time, a line longer than :data:`MAX_SESSION_LINE_BYTES` (32 MiB), a file longer than
:data:`MAX_SESSION_FILE_BYTES` (64 MiB) or with more than :data:`MAX_SESSION_LINES` (100,000)
lines is refused with a :class:`SessionFileError`
(``FILE:1: line longer than 32 MiB (the limit for one session line)``) before more is read.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic

from pi_core._errors import PiError
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import AgentMessage, AssistantMessage

SESSION_VERSION = 3
"""The version of the Pi session files pi writes (Pi 1.6.0's ``CURRENT_SESSION_VERSION``)."""

SESSION_VERSIONS = range(1, SESSION_VERSION + 1)
"""The versions pi reads; another one is a :class:`SessionFileError` (a file of a later Pi
could mean its entries differently)."""

FileFormat = Literal["messages", "session"]


@functools.cache
def _message_adapter() -> pydantic.TypeAdapter[Any]:
    """The validator of one message line, built at its first use: building it (the union of
    every message model) costs 12 million instructions, which a command that reads no session
    file (``pi call``) does not pay."""
    return pydantic.TypeAdapter(AgentMessage)


MAX_SESSION_LINE_BYTES = 32 * 1024 * 1024
"""Longest line pi reads from a session file, message JSONL or script (32 MiB)."""

MAX_SESSION_FILE_BYTES = 64 * 1024 * 1024
"""Largest session file, message JSONL or script pi reads (64 MiB)."""

MAX_SESSION_LINES = 100_000
"""Most lines pi reads from a session file, message JSONL or script (each parsed line costs
about 1 KiB of memory beyond its text)."""


class SessionFileError(PiError, ValueError):
    """A session or message file pi cannot read; the message names the file and line."""


@dataclass(frozen=True)
class SessionEntry:
    """One line of a Pi session file: its 1-based ``line`` number and the ``raw`` JSON object."""

    line: int
    raw: dict[str, Any]

    @property
    def type(self) -> str | None:
        """The entry's ``type`` (``session``, ``message``, ``compaction``, ...)."""
        kind = self.raw.get("type")
        return kind if isinstance(kind, str) else None

    @property
    def id(self) -> str | None:
        """The tree id (v2/v3 entries), ``None`` in flat files."""
        value = self.raw.get("id")
        return value if isinstance(value, str) else None

    @property
    def parent_id(self) -> str | None:
        """The parent's id; ``None`` for a root or a flat entry."""
        value = self.raw.get("parentId")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class SessionFile:
    """A parsed file.

    * ``source``: the name used in messages (the path as given).
    * ``format``: ``"messages"`` (message JSONL) or ``"session"`` (a Pi session file).
    * ``version``: the session header's ``version`` (``1`` when the header has none), ``None``
      for message JSONL.
    * ``header``: the ``{"type": "session", ...}`` object, if any.
    * ``entries``: every session entry in file order (empty for message JSONL).
    * ``messages``: the messages that count (all of a JSONL or flat file; the active branch of a
      tree), in order.
    """

    source: str
    format: FileFormat
    version: int | None = None
    header: dict[str, Any] | None = None
    entries: list[SessionEntry] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)

    @property
    def assistant_messages(self) -> list[AssistantMessage]:
        """The assistant messages among :attr:`messages`, in order."""
        return [m for m in self.messages if isinstance(m, AssistantMessage)]


def read_session_file(path: Path | str) -> SessionFile:
    """Read and parse ``path`` (see the module docstring for the formats).

    Raises :class:`SessionFileError` when the file cannot be read (``cannot read FILE: ...``),
    is not UTF-8, or a line is not a message or a session entry.
    """
    source = str(path)
    return _parse_lines(read_bounded_lines(path, source), source)


def read_bounded_lines(
    path: Path | str,
    source: str,
    *,
    max_line: int = MAX_SESSION_LINE_BYTES,
    max_total: int = MAX_SESSION_FILE_BYTES,
    max_lines: int = MAX_SESSION_LINES,
) -> list[str]:
    """The UTF-8 lines of ``path`` (split on ``\\n``, a trailing ``\\r`` kept), read one at a
    time so that memory stays bounded: a line over ``max_line`` bytes (its ``\\n`` not counted) or a file over
    ``max_total`` bytes or ``max_lines`` lines raises :class:`SessionFileError` (``FILE:N: line
    longer than 32 MiB (the limit for one session line)``, ``FILE: longer than 64 MiB (the limit
    for a session file)``, ``FILE: more than 100000 lines (the limit for a session file)``), as
    do an unreadable file (``cannot read FILE: ...``) and bytes that are not
    UTF-8 (``FILE:N: not valid UTF-8``)."""
    lines: list[str] = []
    total = 0
    try:
        with Path(path).open("rb") as handle:
            while raw := handle.readline(max_line + 1):
                number = len(lines) + 1
                if number > max_lines:
                    raise SessionFileError(
                        f"{source}: more than {max_lines} lines (the limit for a session file)"
                    )
                if len(raw) > max_line and not raw.endswith(b"\n"):
                    raise SessionFileError(
                        f"{source}:{number}: line longer than {_mib(max_line)} "
                        "(the limit for one session line)"
                    )
                total += len(raw)
                if total > max_total:
                    raise SessionFileError(
                        f"{source}: longer than {_mib(max_total)} (the limit for a session file)"
                    )
                try:
                    lines.append(raw.removesuffix(b"\n").decode("utf-8"))
                except UnicodeDecodeError:
                    raise SessionFileError(f"{source}:{number}: not valid UTF-8") from None
    except OSError as e:
        raise SessionFileError(f"cannot read {source}: {e.strerror or e}") from None
    return lines


def _mib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size} bytes"


def parse_session_text(text: str, source: str = "<string>") -> SessionFile:
    """Parse the text of a session file or message JSONL; ``source`` names it in errors."""
    return _parse_lines(text.split("\n"), source)


def _parse_lines(lines: list[str], source: str) -> SessionFile:
    objects: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
        except json.JSONDecodeError as e:
            raise SessionFileError(
                f"{source}:{number}: invalid JSON: {e.msg} (column {e.colno})"
            ) from None
        except RecursionError:
            raise SessionFileError(f"{source}:{number}: nested too deeply to parse") from None
        if not isinstance(obj, dict):
            raise SessionFileError(f"{source}:{number}: expected a JSON object")
        objects.append((number, obj))
    if (
        objects
        and not _is_message(objects[0][1])
        and not isinstance(objects[0][1].get("type"), str)
    ):
        raise SessionFileError(
            f'{source}:{objects[0][0]}: expected a message (an object with "role") '
            'or a Pi session entry (an object with "type")'
        )
    if not objects or _is_message(objects[0][1]):
        return SessionFile(
            source=source,
            format="messages",
            messages=[_message(source, number, obj) for number, obj in objects],
        )
    return _parse_session(source, objects)


def _is_message(obj: dict[str, Any]) -> bool:
    return "role" in obj and "type" not in obj


def _message(source: str, number: int, obj: Any) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
        raise SessionFileError(f'{source}:{number}: expected a message (an object with "role")')
    try:
        return _message_adapter().validate_python(obj)
    except pydantic.ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"] if not _is_tag(part))
        raise SessionFileError(
            f"{source}:{number}: invalid {obj['role']} message: "
            + (f"{where}: " if where else "")
            + first["msg"]
        ) from None


def _is_tag(part: Any) -> bool:
    """Discriminator tags pydantic puts in error locations (``assistant``, ``toolCall``...)."""
    return isinstance(part, str) and part in (
        "user",
        "assistant",
        "toolResult",
        "custom",
        "text",
        "image",
        "thinking",
        "toolCall",
        "other",
    )


def _parse_session(source: str, objects: list[tuple[int, dict[str, Any]]]) -> SessionFile:
    header: dict[str, Any] | None = None
    header_line = 1
    entries: list[SessionEntry] = []
    for number, obj in objects:
        if _is_message(obj) or not isinstance(obj.get("type"), str):
            raise SessionFileError(
                f'{source}:{number}: expected a session entry (an object with "type")'
            )
        if obj["type"] == "session":
            if header is not None or entries:
                raise SessionFileError(f"{source}:{number}: a second session header")
            header, header_line = obj, number
            continue
        entries.append(SessionEntry(line=number, raw=obj))
    version = header.get("version", 1) if header is not None else 1
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionFileError(f"{source}:{header_line}: session version must be an integer")
    if version not in SESSION_VERSIONS:
        raise SessionFileError(
            f"{source}:{header_line}: session version {version} is not supported "
            f"(pi reads versions {SESSION_VERSIONS[0]} to {SESSION_VERSIONS[-1]})"
        )
    tree = version >= 2 or any(entry.id is not None for entry in entries)
    branch = _active_branch(source, entries) if tree else entries
    messages = [
        _message(source, entry.line, entry.raw.get("message"))
        for entry in branch
        if entry.type == "message"
    ]
    return SessionFile(
        source=source,
        format="session",
        version=version,
        header=header,
        entries=entries,
        messages=messages,
    )


def _active_branch(source: str, entries: list[SessionEntry]) -> list[SessionEntry]:
    """Root-to-leaf path ending at the last entry that has an id."""
    by_id: dict[str, SessionEntry] = {}
    for entry in entries:
        if entry.id is None:
            raise SessionFileError(f'{source}:{entry.line}: tree entry without "id"')
        if entry.id in by_id:
            raise SessionFileError(
                f"{source}:{entry.line}: duplicate id {entry.id!r} (first on line "
                f"{by_id[entry.id].line})"
            )
        by_id[entry.id] = entry
    if not entries:
        return []
    path: list[SessionEntry] = []
    seen: set[str] = set()
    current: SessionEntry | None = entries[-1]
    while current is not None:
        assert current.id is not None
        if current.id in seen:
            raise SessionFileError(f"{source}:{current.line}: parentId cycle at {current.id!r}")
        seen.add(current.id)
        path.append(current)
        parent = current.parent_id
        if parent is None:
            break
        if parent not in by_id:
            raise SessionFileError(
                f"{source}:{current.line}: parentId {parent!r} names no entry of the file"
            )
        current = by_id[parent]
    path.reverse()
    return path


__all__ = [
    "MAX_SESSION_FILE_BYTES",
    "MAX_SESSION_LINES",
    "MAX_SESSION_LINE_BYTES",
    "SESSION_VERSION",
    "SESSION_VERSIONS",
    "FileFormat",
    "SessionEntry",
    "SessionFile",
    "SessionFileError",
    "parse_session_text",
    "read_bounded_lines",
    "read_session_file",
]
