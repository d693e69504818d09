"""The data of a session report: a session file (pi's own or Pi 1.6's), an audit log, and the
timings a live run recorded, turned into one JSON-able dict the page renders.

The dict (``build_report``)::

    {"title", "source", "format", "cwd", "model",
     "summary": {"turns", "calls", "tools": {name: n}, "errors", "blocked", "wallMs"},
     "items": [{"k": "user"|"assistant"|"thinking"|"note", "text"} | {"k": "batch", "b": n}],
     "batches": [{"start": ms|None, "calls": [call index, ...], "timed": bool}],
     "calls": [{"id", "tool", "args", "text", "images", "error", "diff", "truncated",
                "fullOutputPath", "start", "end", "parent", "children", "audit", "blocked",
                "status"}]}

Every string taken from the session is made visible (:func:`visible`): terminal escape
sequences and other control characters become their Unicode control pictures (``ESC`` shows
as ``␛``), bidirectional overrides their code point, so nothing from the session can act on the
page or the terminal it is copied to. The page itself only ever puts these strings into the
document as text (``textContent``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pi_core._wire.json_parse import parse_json
from pi_core._wire.session_files import (
    SessionEntry,
    SessionFileError,
    _active_branch,
    read_bounded_lines,
)

_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as a visible sign
    (``\\x1b[31m`` → ``␛[31m``, a lone ``\\r`` → ``␍``; ``\\r\\n`` is a newline)."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_picture, text)


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return visible(text)


def _ms(value: Any) -> float | None:
    """A timestamp (epoch milliseconds, or an ISO 8601 string) in epoch milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
        except ValueError:
            return None
    return None


def _image(block: dict[str, Any]) -> dict[str, str] | None:
    mime = block.get("mimeType")
    data = block.get("data")
    if mime not in IMAGE_TYPES or not isinstance(data, str) or not _BASE64.fullmatch(data):
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return {"mime": mime, "data": data}


def _blocks(content: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    """``(type, block)`` of each object block of a message's ``content`` list."""
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            yield block.get("type"), block


def _content_text(content: Any) -> tuple[str, list[dict[str, str]], int]:
    """(text, images, invalid images) of a message's ``content`` (a string or blocks)."""
    if isinstance(content, str):
        return visible(content), [], 0
    texts: list[str] = []
    images: list[dict[str, str]] = []
    invalid = 0
    for kind, block in _blocks(content):
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image":
            image = _image(block)
            if image is None:
                invalid += 1
            else:
                images.append(image)
    return visible("\n".join(texts)), images, invalid


@dataclass
class CallTiming:
    """When a call ran (epoch milliseconds), as a live run saw it."""

    start: float
    end: float | None = None


@dataclass
class RunRecord:
    """What a live run adds to its messages: call timings and nested calls with their results
    (the :class:`~pi_core._report.recorder.ReportRecorder` fills it)."""

    timings: dict[str, CallTiming] = field(default_factory=dict)
    nested: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Nested call id → ``{"tool", "args", "parent", "result", "error"}``."""


def read_audit(path: str | Path) -> list[dict[str, Any]]:
    """The decisions of an audit log, in order; a torn or non-JSON line is skipped."""
    source = str(path)
    lines = read_bounded_lines(path, source)
    decisions: list[dict[str, Any]] = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            decisions.append(value)
    return decisions


def _audit_entry(line: dict[str, Any]) -> dict[str, Any]:
    entry = {
        key: visible(str(line[key]))
        for key in ("time", "phase", "decision", "source", "reason")
        if line.get(key) is not None
    }
    for key in ("approval", "detail"):
        if line.get(key) is not None:
            entry[key] = _json_text(line[key])
    return entry


class _Builder:
    def __init__(self, source: str, audit: list[dict[str, Any]], run: RunRecord | None) -> None:
        self.source = source
        self.run = run or RunRecord()
        self.items: list[dict[str, Any]] = []
        self.batches: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        self.audit: dict[str, list[dict[str, Any]]] = {}
        for line in audit:
            call_id = line.get("tool_call_id")
            if isinstance(call_id, str):
                self.audit.setdefault(call_id, []).append(line)
        self.turns = 0
        self.times: list[float] = []

    def _new_call(self, call_id: str, tool: str, args: Any, parent: str | None) -> dict[str, Any]:
        call: dict[str, Any] = {
            "i": len(self.calls),
            "id": visible(call_id),
            "tool": visible(tool),
            "args": _json_text(args),
            "text": "",
            "images": [],
            "badImages": 0,
            "error": False,
            "status": "no result",
            "diff": None,
            "truncated": False,
            "fullOutputPath": None,
            "start": None,
            "end": None,
            "parent": None,
            "children": [],
            "audit": [],
            "blocked": False,
        }
        timing = self.run.timings.get(call_id)
        if timing is not None:
            call["start"] = timing.start
            call["end"] = timing.end
        decisions = self.audit.get(call_id, [])
        call["audit"] = [_audit_entry(d) for d in decisions]
        call["blocked"] = any(
            d.get("phase") == "before" and d.get("decision") == "deny" for d in decisions
        )
        self.calls.append(call)
        self.by_id[call_id] = call
        if parent is not None and parent in self.by_id:
            call["parent"] = self.by_id[parent]["i"]
            self.by_id[parent]["children"].append(call["i"])
        return call

    def message(self, message: dict[str, Any], entry_time: float | None) -> None:
        role = message.get("role")
        stamp = _ms(message.get("timestamp"))
        # a live run's wall time is its calls' and messages' own times: a replayed assistant
        # message keeps the time it was recorded at
        if not (self.run.timings and role == "assistant"):
            self.times += [value for value in (entry_time, stamp) if value is not None]
        if role == "user":
            text, images, _ = _content_text(message.get("content"))
            self.items.append({"k": "user", "text": text, "images": images})
        elif role == "assistant":
            self.assistant(message, entry_time if entry_time is not None else stamp)
        elif role == "toolResult":
            self.result(message)
        elif role == "system":
            return
        else:
            text, _, _ = _content_text(message.get("content"))
            self.items.append({"k": "note", "text": text or _json_text(message)})

    def assistant(self, message: dict[str, Any], when: float | None) -> None:
        self.turns += 1
        tool_calls: list[dict[str, Any]] = []
        texts: list[str] = []
        for kind, block in _blocks(message.get("content")):
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                if block["thinking"].strip():
                    self.items.append({"k": "thinking", "text": visible(block["thinking"])})
            elif kind == "toolCall":
                tool_calls.append(block)
        if texts and "".join(texts).strip():
            self.items.append({"k": "assistant", "text": visible("\n".join(texts))})
        if message.get("stopReason") in ("error", "aborted") and message.get("errorMessage"):
            self.items.append({"k": "note", "text": visible(str(message["errorMessage"]))})
        if not tool_calls:
            return
        members: list[int] = []
        for block in tool_calls:
            call_id = block["id"] if isinstance(block.get("id"), str) else ""
            name = block["name"] if isinstance(block.get("name"), str) else "?"
            call = self._new_call(call_id, name, block.get("arguments"), None)
            call["batch"] = len(self.batches)
            members.append(call["i"])
        timed = all(self.calls[i]["start"] is not None for i in members)
        start = min(self.calls[i]["start"] for i in members) if timed else when
        batch = {"start": start, "calls": members, "timed": timed}
        self.items.append({"k": "batch", "b": len(self.batches)})
        self.batches.append(batch)

    def result(self, message: dict[str, Any]) -> None:
        call_id = message.get("toolCallId")
        call = self.by_id.get(call_id) if isinstance(call_id, str) else None
        if call is None:  # a result without its call: shown on its own
            name = message.get("toolName") if isinstance(message.get("toolName"), str) else "?"
            call = self._new_call(str(call_id), str(name), None, None)
            self.items.append({"k": "orphan", "c": call["i"]})
        self.fill_result(call, message.get("content"), message.get("isError"), message)
        if call["end"] is None:
            call["end"] = _ms(message.get("timestamp"))
        nested = message.get("nestedCalls")
        if isinstance(nested, dict) and isinstance(nested.get("calls"), list):
            self.nested_record(call, nested)

    def fill_result(
        self, call: dict[str, Any], content: Any, is_error: Any, message: dict[str, Any]
    ) -> None:
        text, images, invalid = _content_text(content)
        call["text"] = text
        call["images"] = images
        call["badImages"] = invalid
        call["error"] = bool(is_error)
        call["status"] = "error" if is_error else "ok"
        if call["blocked"]:
            call["status"] = "blocked"
        details = message.get("details")
        if isinstance(details, dict):
            diff = details.get("diff")
            if isinstance(diff, str) and diff:
                call["diff"] = visible(diff)
            truncation = details.get("truncation")
            if isinstance(truncation, dict) and truncation.get("truncated") is not False:
                call["truncated"] = True
            for key in ("fullOutputPath", "full_output_path"):
                if isinstance(details.get(key), str):
                    call["fullOutputPath"] = visible(details[key])
                    call["truncated"] = True

    def nested_record(self, parent: dict[str, Any], record: dict[str, Any]) -> None:
        """The ``nestedCalls`` record of a model-issued call: ids ``<caller>/<n>[/<m>...]``."""
        for entry in record["calls"]:
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                continue
            nested_id = entry["id"]
            if nested_id in self.by_id:
                continue
            caller = nested_id.rpartition("/")[0]
            caller_id = caller if caller in self.by_id else self.calls[parent["i"]]["id"]
            args = entry.get("arguments", {"argumentsBytes": entry.get("argumentsBytes")})
            call = self._new_call(nested_id, str(entry.get("name", "?")), args, caller_id)
            live = self.run.nested.get(nested_id)
            if live is not None:
                self.fill_result(call, live.get("content"), live.get("isError"), live)
            else:
                status = entry.get("status")
                call["status"] = visible(str(status))
                call["error"] = status == "error"
                if isinstance(entry.get("error"), str):
                    call["text"] = visible(entry["error"])
                if call["blocked"]:
                    call["status"] = "blocked"
            if isinstance(entry.get("durationMs"), (int, float)) and call["end"] is None:
                call["durationMs"] = entry["durationMs"]

    def summary(self) -> dict[str, Any]:
        tools = Counter(c["tool"] for c in self.calls)
        wall = max(self.times) - min(self.times) if len(self.times) > 1 else 0
        return {
            "turns": self.turns,
            "calls": len(self.calls),
            "tools": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))),
            "errors": sum(1 for c in self.calls if c["error"]),
            "blocked": sum(1 for c in self.calls if c["blocked"]),
            "wallMs": round(wall),
        }


@dataclass
class RawSession:
    """A session file as the report reads it: JSON objects, not validated messages (a report
    shows what a file holds, also what ``pi replay`` would refuse)."""

    source: str
    format: str
    version: int | None
    header: dict[str, Any] | None
    entries: list[SessionEntry]
    messages: list[dict[str, Any]]


def read_raw_session(path: str | Path) -> RawSession:
    """Read ``path`` (message JSONL or a Pi session file, flat or a tree) with the bounds of
    :func:`~pi_core._wire.session_files.read_bounded_lines`; a line that is not a JSON object
    is a :class:`SessionFileError` naming the file and line."""
    source = str(path)
    objects: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(read_bounded_lines(path, source), 1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except json.JSONDecodeError as e:
            raise SessionFileError(f"{source}:{number}: invalid JSON: {e.msg}") from None
        if not isinstance(value, dict):
            raise SessionFileError(f"{source}:{number}: expected a JSON object")
        objects.append((number, value))
    if objects and objects[0][1].get("type") == "session":
        header = objects[0][1]
        entries = [SessionEntry(line=n, raw=o) for n, o in objects[1:]]
        version = header.get("version", 1)
        version = version if isinstance(version, int) else 1
        if version >= 2 or any(e.id is not None for e in entries):
            entries = _active_branch(source, entries)
        return RawSession(source, "session", version, header, entries, [])
    if objects and "role" not in objects[0][1] and isinstance(objects[0][1].get("type"), str):
        entries = [SessionEntry(line=n, raw=o) for n, o in objects]
        if any(e.id is not None for e in entries):
            entries = _active_branch(source, entries)
        return RawSession(source, "session", 1, None, entries, [])
    return RawSession(source, "messages", None, None, [], [o for _, o in objects])


def build_report(
    session: RawSession,
    *,
    audit: list[dict[str, Any]] | None = None,
    run: RunRecord | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The report data of ``session`` (see the module docstring)."""
    builder = _Builder(session.source, audit or [], run)
    header = session.header or {}
    model = None
    if isinstance(header.get("modelId"), str):
        model = f"{header.get('provider', '')}:{header['modelId']}"
    if session.format != "session":
        for message in session.messages:
            builder.message(message, None)
    else:
        for entry in session.entries:
            raw = entry.raw
            kind = entry.type
            when = _ms(raw.get("timestamp"))
            if kind == "message" and isinstance(raw.get("message"), dict):
                builder.message(raw["message"], when)
            elif kind == "model_change" and isinstance(raw.get("modelId"), str):
                model = f"{raw.get('provider', '')}:{raw['modelId']}"
            elif kind == "compaction":
                summary = raw.get("summary")
                text = summary if isinstance(summary, str) else ""
                builder.items.append({"k": "note", "text": visible("compaction\n" + text)})
            elif kind == "custom_message":
                text, _, _ = _content_text(raw.get("content"))
                builder.items.append({"k": "note", "text": text})
    return {
        "title": visible(title or Path(session.source).name),
        "source": visible(session.source),
        "format": {"messages": "message JSONL", "session": f"Pi session v{session.version}"}.get(
            session.format, session.format
        ),
        "cwd": visible(str(header.get("cwd", ""))),
        "model": visible(model) if model else "",
        "summary": builder.summary(),
        "items": builder.items,
        "batches": builder.batches,
        "calls": builder.calls,
    }


def report_from_files(
    session_path: str | Path, audit_path: str | Path | None = None
) -> dict[str, Any]:
    """:func:`build_report` of a session file and, if given, an audit log. Raises
    :class:`~pi_core._wire.session_files.SessionFileError` (one line) for a file it cannot
    read."""
    session = read_raw_session(session_path)
    audit = read_audit(audit_path) if audit_path is not None else None
    return build_report(session, audit=audit)


__all__ = [
    "IMAGE_TYPES",
    "CallTiming",
    "RawSession",
    "RunRecord",
    "SessionFileError",
    "build_report",
    "read_audit",
    "read_raw_session",
    "report_from_files",
    "visible",
]
