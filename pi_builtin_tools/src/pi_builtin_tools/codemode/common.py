"""The language-neutral parts of codemode (delta §3.2, §3.5, §3.6), shared by the scripting
engines (``codemode_python``; the JavaScript ``codemode``):

* :func:`parse_options_line`: the ``@options`` first line and its errors;
* :class:`ScriptRun`: what a script produced (text, console and image items within the output
  limits) and its ``details.calls`` rows;
* :func:`script_result`: the result layout, in Pi's order (``formatOutput``, the ``Script error``
  item, ``joinAdjacentText``, the output budget with its full-output file, images saved to temp
  files, ``joinAdjacentText``; the ``Script completed``/``Script failed`` header is its own block);
* :class:`Store`: ``store``/``load`` with Pi's limits and texts;
* :func:`codemode_worker_slot`: the workers shared by every session of the process (FIFO).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import secrets
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

# trio.testing.wait_all_tasks_blocked is this function; importing trio.testing imports pytest
# (about 100 ms at the first script)
from trio._core import wait_all_tasks_blocked

from pi_core import AgentToolResult, ImageContent, TextContent, parse_json

DEFAULT_MAX_OUTPUT_TOKENS = 10_000
CHARS_PER_TOKEN = 4
MAX_OUTPUT_CHARS = 16 * 1024 * 1024
MAX_OUTPUT_ITEMS = 100_000
MAX_STORE_VALUE_CHARS = 256 * 1024
MAX_STORE_TOTAL_CHARS = 1024 * 1024
VM_MEMORY_BYTES = 256 * 1024 * 1024
CALL_ARGS_CHARS = 200
CALL_ERROR_CHARS = 500
DEFAULT_MAX_WORKERS = 2
WORKER_WAIT_SECONDS = 60.0
CALL_TURN_SECONDS = 1.0
"""At most this long a script engine lets a nested call it just started run before it takes
the script's next message (:func:`run_call_turn`)."""

STORE_HINT = (
    "store() is for small state such as IDs or summaries. Show images with image(), keep large "
    "data in variables, or write it to a file with a tool."
)


class ScriptFailure(Exception):
    """An error a script sees as raised by a global (``text``, ``image``, ``store``...): its
    ``kind`` is the exception type the script gets (``TypeError``, ``RangeError``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------------------------------------
# The @options line (§3.2)
# ---------------------------------------------------------------------------------------------


def parse_options_line(
    code: str, *, prefix: str, language: str, first_line_hint: str
) -> tuple[str, dict[str, int]]:
    """``(code, options)`` of a codemode input: ``prefix`` is ``// @options:`` (JavaScript) or
    ``# @options:`` (Python). Raises ``ValueError`` with Pi's texts (``language`` and
    ``first_line_hint`` fill the empty-input text). The code keeps its line numbers."""
    fields_text = "`max_output_tokens` and `timeout_ms`"
    if code.strip() == "":
        raise ValueError(f"Expected {language} source text (non-empty). Provide {first_line_hint}")
    lines = code.split("\n")
    for n, line in enumerate(lines[1:], start=2):
        if line.lstrip().startswith(prefix):
            raise ValueError(
                f"The {prefix} line must be the first line of the input; found one on line {n}"
            )
    first = lines[0].lstrip().removesuffix("\r")
    if not first.startswith(prefix):
        return code, {}
    raw = first[len(prefix) :].strip()
    must_object = f"@options must be a JSON object with supported fields {fields_text}"
    if raw == "":
        raise ValueError(must_object)
    try:
        options = parse_json(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"@options must be valid JSON with supported fields {fields_text}: {exc}"
        ) from None
    if not isinstance(options, dict):
        raise ValueError(must_object)
    for key, value in options.items():
        if key not in ("max_output_tokens", "timeout_ms"):
            raise ValueError(f"@options only supports {fields_text}; got `{key}`")
        safe = isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53
        if key == "max_output_tokens" and not (safe and value >= 0):
            raise ValueError(
                "@options field `max_output_tokens` must be a non-negative safe integer"
            )
        if key == "timeout_ms" and not (safe and 1 <= value <= 2147483647):
            raise ValueError(
                "@options field `timeout_ms` must be a positive integer up to 2147483647"
            )
    rest = code[code.index("\n") :] if "\n" in code else ""
    if rest.strip() == "":
        raise ValueError(
            f"The @options line must be followed by {language} source on subsequent lines"
        )
    return rest, options


# ---------------------------------------------------------------------------------------------
# Output items and call rows
# ---------------------------------------------------------------------------------------------


def compact_json(value: Any) -> str:
    """JSON as ``JSON.stringify`` writes it (no spaces, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def js_value(value: Any) -> Any:
    """``value`` from a Python script with its numbers as JavaScript has them: an integer
    beyond a double's range (over 1,024 bits) is ``inf`` or ``-inf``, as ``JSON.parse`` reads
    it (:func:`pi_core.parse_json`); through lists, tuples and dicts. Such an integer cannot be
    written as text at all (Python refuses to convert more than 4,300 digits), so every value a
    script hands over (tool arguments, ``text()``, the globals' arguments) goes through this."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value.bit_length() <= 1024 else (math.inf if value > 0 else -math.inf)
    if isinstance(value, list | tuple):
        return type(value)(js_value(item) for item in value) if value else value
    if isinstance(value, dict):
        return {js_value(k): js_value(v) for k, v in value.items()} if value else value
    return value


def text_of(value: Any) -> str:
    """What ``text(v)`` appends: strings as they are, anything else as compact JSON (``str``
    of the value when it is not JSON)."""
    if isinstance(value, str):
        return value
    value = js_value(value)
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return str(value)


IMAGE_SIGNATURES = (
    ("image/png", re.compile(r"^iVBORw0KGg")),
    ("image/jpeg", re.compile(r"^/9j/(?!9)")),
    ("image/gif", re.compile(r"^R0lGOD[dl]h")),
    ("image/webp", re.compile(r"^UklG.{8}RUJQ")),
)
IMAGE_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
}
IMAGE_EXPECTS = (
    "image expects a non-empty image URL string, an object with image_url, or an image block "
    '{ type: "image", data, mimeType }'
)


def image_data(value: Any) -> tuple[str, str]:
    """``(base64 data, detected mime type)`` of what ``image(v)`` accepts (Pi's checks and
    texts; the declared type is ignored in favour of the detected one). ``ScriptFailure``."""
    if isinstance(value, str):
        url = value
    elif isinstance(value, dict):
        if "image_url" in value:
            if not isinstance(value["image_url"], str):
                raise ScriptFailure("TypeError", IMAGE_EXPECTS)
            url = value["image_url"]
        else:
            kind = value.get("type")
            if not isinstance(kind, str):
                raise ScriptFailure("TypeError", IMAGE_EXPECTS)
            if kind != "image":
                raise ScriptFailure("TypeError", f'image only accepts image blocks, got "{kind}"')
            data = value.get("data")
            if not isinstance(data, str) or data == "":
                raise ScriptFailure("TypeError", "image expected image block data")
            url = data if data.lower().startswith("data:") else "data:;base64," + data
    else:
        raise ScriptFailure("TypeError", IMAGE_EXPECTS)
    if url == "":
        raise ScriptFailure("TypeError", IMAGE_EXPECTS)
    colon = url.find(":")
    scheme = "" if colon == -1 else url[:colon].lower()
    if scheme in ("http", "https"):
        raise ScriptFailure(
            "TypeError",
            "remote image URLs are not supported in tool outputs. Pass a base64 data URI instead",
        )
    comma = url.find(",")
    header = [] if comma == -1 else url[colon + 1 : comma].split(";")
    if scheme != "data" or comma == -1 or all(p.lower() != "base64" for p in header[1:]):
        raise ScriptFailure("TypeError", "invalid image output. Pass a base64 data URI instead")
    data = re.sub(r"\s+", "", url[comma + 1 :])
    if len(data) % 4 != 0 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", data):
        raise ScriptFailure(
            "TypeError",
            "invalid image output. The image data is not valid base64 (truncated or corrupted?)",
        )
    for mime, pattern in IMAGE_SIGNATURES:
        if pattern.match(data[:16]):
            return data, mime
    raise ScriptFailure(
        "TypeError", "invalid image output. The image data is not a PNG, JPEG, GIF, or WebP image"
    )


@dataclass
class OutputItem:
    """A ``text()`` item (``console`` for a console line) or an image."""

    kind: str  # "text" | "console" | "image"
    text: str = ""
    data: str = ""
    mime_type: str = ""


_ROW_FIELDS = frozenset({"id", "name", "args", "status", "duration_ms", "error"})
"""The fields of :class:`CallRow` that its JSON row shows."""


@dataclass
class CallRow:
    """One row of ``details.calls``.

    A row started by :meth:`ScriptRun.start_call` keeps its JSON object in the run's list of
    rows, replaced (never changed in place) whenever a field it shows is set: a progress update
    then copies that list instead of building every row again, so a script's ``n`` nested calls
    cost ``O(n)`` rows each, not ``O(n)`` dicts each (P9: 1,000 calls built a million)."""

    id: str
    name: str
    args: str
    status: str = "running"
    started: float = field(default_factory=time.monotonic)
    duration_ms: int | None = None
    error: str | None = None
    _rows: list[dict[str, Any]] | None = field(default=None, init=False, repr=False, compare=False)
    _index: int = field(default=-1, init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in _ROW_FIELDS:
            rows = self.__dict__.get("_rows")
            if rows is not None:
                rows[self._index] = self.to_json()

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.id, "name": self.name, "args": self.args}
        row["status"] = self.status
        if self.duration_ms is not None:
            row["durationMs"] = self.duration_ms
        if self.error is not None:
            row["error"] = self.error
        return row


@dataclass
class ScriptRun:
    """What one script produced: its output items and its nested calls."""

    codemode_id: str
    output: list[OutputItem] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    output_chars: int = 0
    _rows: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    """The JSON row of each of :attr:`calls` (kept by the rows themselves)."""

    def add(self, item: OutputItem) -> None:
        """Append an item; past the output limits the script fails (``ScriptFailure``)."""
        self.output_chars += len(item.data if item.kind == "image" else item.text)
        if self.output_chars > MAX_OUTPUT_CHARS or len(self.output) + 1 > MAX_OUTPUT_ITEMS:
            raise ScriptFailure(
                "RangeError",
                f"script output exceeded the limit of {MAX_OUTPUT_CHARS} characters or "
                f"{MAX_OUTPUT_ITEMS} text(), image(), and console calls. Print a summary "
                "instead, or write large data to a file with a tool.",
            )
        self.output.append(item)

    def start_call(self, name: str, args: Any) -> CallRow:
        text = text_of(args if args is not None else {})
        if len(text) > CALL_ARGS_CHARS:
            text = text[:CALL_ARGS_CHARS] + "..."
        row = CallRow(id=f"{self.codemode_id}/?", name=name, args=text)
        self.calls.append(row)
        self._rows.append(row.to_json())
        row._index = len(self._rows) - 1
        row._rows = self._rows
        return row

    @staticmethod
    def finish_call(row: CallRow, call_id: str, status: str, error: str | None) -> None:
        row.id = call_id
        row.status = status
        row.duration_ms = round((time.monotonic() - row.started) * 1000)
        if error is not None:
            row.error = error[:CALL_ERROR_CHARS]

    def details(self) -> dict[str, Any]:
        if len(self._rows) == len(self.calls):
            return {"calls": list(self._rows)}
        return {"calls": [row.to_json() for row in self.calls]}  # rows appended by hand


# ---------------------------------------------------------------------------------------------
# The result (§3.5)
# ---------------------------------------------------------------------------------------------


def calls_made_text(calls: list[CallRow]) -> str:
    """``No tool calls were made.`` or the list of calls made before the failure."""
    if not calls:
        return "No tool calls were made."
    listed = ", ".join(f"{row.name} ({row.status})" for row in calls)
    return f"Tool calls made before the failure (they are not undone): {listed}"


Item = TextContent | ImageContent


def format_output(output: list[OutputItem]) -> list[Item]:
    """Number the text items when there are several; console lines go last in one block."""
    total = sum(1 for item in output if item.kind == "text")
    items: list[Item] = []
    console: list[str] = []
    index = 0
    for item in output:
        if item.kind == "image":
            items.append(ImageContent(data=item.data, mime_type=item.mime_type))
        elif item.kind == "console":
            console.append(item.text)
        else:
            index += 1
            text = f"==> text {index}/{total} <==\n{item.text}" if total > 1 else item.text
            items.append(TextContent(text=text))
    if console:
        lines = "\n".join(console)
        items.append(TextContent(text=f"<console_output>\n{lines}\n</console_output>"))
    return items


def join_adjacent_text(items: list[Item]) -> list[Item]:
    """Join adjacent text items, each part starting on its own line."""
    joined: list[Item] = []
    parts: list[str] = []
    last = ""
    for item in items:
        if isinstance(item, ImageContent):
            if parts:
                joined.append(TextContent(text="".join(parts)))
            parts, last = [], ""
            joined.append(item)
            continue
        if last != "" and not last.endswith("\n"):
            parts.append("\n")
            last = "\n"
        parts.append(item.text)
        if item.text != "":
            last = item.text
    if parts:
        joined.append(TextContent(text="".join(parts)))
    return joined


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _slice_head(text: str, units: int) -> str:
    """The first ``units`` UTF-16 units, not splitting a surrogate pair."""
    encoded = text.encode("utf-16-le")[: 2 * max(0, units)]
    return encoded.decode("utf-16-le", errors="ignore")


def _slice_tail(text: str, units: int) -> str:
    if units <= 0:
        return ""
    encoded = text.encode("utf-16-le")
    return encoded[max(0, len(encoded) - 2 * units) :].decode("utf-16-le", errors="ignore")


def write_output_file(extension: str, data: bytes) -> str:
    """A new ``pi-codemode-<16 hex><extension>`` in the temp directory, mode 0600."""
    path = os.path.join(tempfile.gettempdir(), f"pi-codemode-{secrets.token_hex(8)}{extension}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def truncate_output(items: list[Item], max_tokens: int) -> tuple[list[Item], str | None]:
    """The output budget: over ``4 * max_tokens`` characters the text items become one that keeps
    the start and end of the text; images follow it; the whole text goes to a file."""
    texts = [item.text for item in items if isinstance(item, TextContent)]
    combined = "\n".join(texts)
    budget = max_tokens * CHARS_PER_TOKEN
    length = _utf16_len(combined)
    if not texts or length <= budget:
        return items, None
    head_chars = budget // 2
    tail_chars = budget - head_chars
    removed = length - head_chars - tail_chars
    text = (
        f"Warning: truncated output (original token count: {math.ceil(length / CHARS_PER_TOKEN)})\n"
        f"Total output lines: {len(combined.split(chr(10)))}\n\n"
        f"{_slice_head(combined, head_chars)}…{math.ceil(removed / CHARS_PER_TOKEN)} tokens "
        f"truncated…{_slice_tail(combined, tail_chars)}"
    )
    path: str | None = None
    try:
        path = write_output_file(".txt", combined.encode("utf-8"))
        text += f"\n\n[Full output: {path} (read with offset/limit)]"
    except OSError as exc:
        text += f"\n\n[Could not save the full output: {exc.strerror or exc}]"
    images: list[Item] = [item for item in items if isinstance(item, ImageContent)]
    return [TextContent(text=text), *images], path


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def save_images(items: list[Item]) -> list[Item]:
    """Each image saved to a temp file, a text item with its path before it (once per image)."""
    labels: dict[str, str] = {}
    result: list[Item] = []
    for item in items:
        if isinstance(item, ImageContent):
            if item.data not in labels:
                raw = base64.b64decode(item.data)
                kind = f"{item.mime_type}, {format_size(len(raw))}"
                try:
                    path = write_output_file(IMAGE_EXTENSIONS[item.mime_type], raw)
                    labels[item.data] = f"[Image saved to {path} ({kind})]"
                except OSError as exc:
                    labels[item.data] = f"[Image ({kind}) could not be saved: {exc}]"
            result.append(TextContent(text=labels[item.data]))
        result.append(item)
    return result


SERVER_TIMEOUT_MS = 300_000
"""The time limit of a script without ``@options timeout_ms`` in a long-running host (``pi mcp
serve``, ``pi run``), so a stuck script cannot hold a codemode worker for good; ``pi call``,
``pi replay`` and the Python API keep Pi's no limit. ``PI_CODEMODE_SERVER_TIMEOUT_MS`` sets
another."""

SERVER_TIMEOUT_HOSTS = ("mcp", "run")
"""The session hosts :data:`SERVER_TIMEOUT_MS` applies in."""


def script_timeout_ms(timeout_ms: int | None, session: Any) -> tuple[int | None, str]:
    """The time limit of a script: its ``@options timeout_ms``, else :data:`SERVER_TIMEOUT_MS`
    when the session's host is one of :data:`SERVER_TIMEOUT_HOSTS`, else none. Also what the
    timeout's error text adds (``""`` for the script's own limit)."""
    if timeout_ms is not None:
        return timeout_ms, ""
    host = getattr(session, "host", None)
    if host in SERVER_TIMEOUT_HOSTS:
        try:
            limit = int(os.environ.get("PI_CODEMODE_SERVER_TIMEOUT_MS", SERVER_TIMEOUT_MS))
        except ValueError:
            limit = SERVER_TIMEOUT_MS
        hint = (
            f" (the default limit of `pi {'mcp serve' if host == 'mcp' else host}`; a script "
            'that needs longer sets it: // @options: {"timeout_ms": N})'
        )
        return max(1, limit), hint
    return None, ""


@dataclass
class ScriptError:
    """Why a script failed: ``kind`` ``script`` (``head`` is the error's stack or
    ``Name: message``), ``timeout``, ``aborted``, ``sandbox`` (``head`` is the message) or
    ``not_started`` (no worker became free: ``The script did not start.`` replaces the calls)."""

    kind: str
    head: str

    def text(self) -> str:
        prefix = {
            "script": "",
            "timeout": "Script timed out: ",
            "aborted": "Script aborted: ",
            "sandbox": "Script sandbox failed: ",
            "not_started": "",
        }[self.kind]
        return prefix + self.head


def script_result(
    run: ScriptRun,
    *,
    started: float,
    error: ScriptError | None,
    value: Any = None,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> AgentToolResult:
    """The codemode result (§3.5). ``value`` (a successful script's returned value, ``None``
    for none) is appended like ``text(value)``; ``started`` is ``time.monotonic()`` at the
    start of the call."""
    for row in run.calls:
        if row.status == "running":
            row.status = "cancelled"
    output = list(run.output)
    if error is None and value is not None:
        output.append(OutputItem("text", text_of(value)))
    items = format_output(output)
    if error is not None:
        calls = (
            "The script did not start."
            if error.kind == "not_started"
            else calls_made_text(run.calls)
        )
        items.append(TextContent(text=f"Script error:\n{error.text()}\n\n{calls}"))
    items, full_path = truncate_output(join_adjacent_text(items), max_output_tokens)
    items = join_adjacent_text(save_images(items))
    wall = f"{time.monotonic() - started:.1f}"
    header = f"Script {'failed' if error else 'completed'}\nWall time {wall} seconds\nOutput:\n"
    details = run.details()
    if full_path is not None:
        details["fullOutputPath"] = full_path
    return AgentToolResult(
        content=[TextContent(text=header), *items],
        details=details,
        is_error=True if error is not None else None,
    )


# ---------------------------------------------------------------------------------------------
# store / load (§3.4, §3.6)
# ---------------------------------------------------------------------------------------------


class Store:
    """``store(key, value)`` / ``load(key)`` over a snapshot of the session's values (key →
    JSON text). ``store(key, None)`` deletes. :meth:`writes` are what a successful script
    commits."""

    def __init__(self, stored: dict[str, str]) -> None:
        self.stored = dict(stored)
        self.chars = sum(len(k) + len(v) for k, v in self.stored.items())
        self._writes: dict[str, str | None] = {}

    def set(self, key: Any, value: Any = None) -> None:
        if not isinstance(key, str):
            raise ScriptFailure("TypeError", "store() key must be a string")
        previous = len(key) + len(self.stored[key]) if key in self.stored else 0
        if value is None:
            self.stored.pop(key, None)
            self.chars -= previous
            self._writes[key] = None
            return
        try:
            encoded = compact_json(value)
        except (TypeError, ValueError) as exc:
            raise ScriptFailure(
                "TypeError", f"store({compact_json(key)}) value is not JSON-serializable: {exc}"
            ) from None
        if len(encoded) > MAX_STORE_VALUE_CHARS:
            raise ScriptFailure(
                "RangeError",
                f"store({compact_json(key)}) value has {len(encoded)} characters of JSON, more "
                f"than the limit of {MAX_STORE_VALUE_CHARS}. {STORE_HINT}",
            )
        after = self.chars - previous + len(key) + len(encoded)
        if after > MAX_STORE_TOTAL_CHARS:
            raise ScriptFailure(
                "RangeError",
                f"store is full: stored values would exceed {MAX_STORE_TOTAL_CHARS} characters "
                f"of JSON. Delete keys with store(key, None). {STORE_HINT}",
            )
        self.stored[key] = encoded
        self.chars = after
        self._writes[key] = encoded

    def get(self, key: Any) -> Any:
        if not isinstance(key, str):
            raise ScriptFailure("TypeError", "load() key must be a string")
        encoded = self.stored.get(key)
        return None if encoded is None else json.loads(encoded)

    def writes(self) -> dict[str, str | None]:
        return dict(self._writes)


STORE_ENTRY_TYPE = "codemode-store"
"""``customType`` of the session entries that keep ``store()`` writes (Pi's)."""

STORE_STATE_KEY = "codemode"
"""``SessionContext.state`` entry of both codemode tools: ``{"store": {key: json text}}``."""


def session_store(session: Any) -> dict[str, str]:
    """The store of ``session`` (a :class:`~pi_core.SessionContext`; anything else: a new empty
    dict): ``state["codemode"]["store"]``, key → JSON text. Made on first use from the
    session's ``codemode-store`` entries (those of the session it continues), in order."""
    state = getattr(session, "state", None)
    if not isinstance(state, dict):
        return {}
    holder = state.setdefault(STORE_STATE_KEY, {})
    if "store" not in holder:
        store: dict[str, str] = {}
        for entry in getattr(session, "entries", None) or []:
            data = entry.get("data") if entry.get("customType") == STORE_ENTRY_TYPE else None
            if isinstance(data, dict):
                for key, value in (data.get("set") or {}).items():
                    store[key] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                for key in data.get("delete") or []:
                    store.pop(key, None)
        holder["store"] = store
    result: dict[str, str] = holder["store"]
    return result


def commit_store(
    session_store: dict[str, str], writes: dict[str, str | None], session: Any = None
) -> None:
    """Apply a successful script's writes to the session's store, and append them to
    ``session`` as the entry ``{customType: "codemode-store", data: {set: {k: v}, delete:
    [k]}}`` (when there are writes; written to the session file when there is one)."""
    for key, encoded in writes.items():
        if encoded is None:
            session_store.pop(key, None)
        else:
            session_store[key] = encoded
    append = getattr(session, "append_entry", None)
    if writes and callable(append):
        data = {
            "set": {k: json.loads(v) for k, v in writes.items() if v is not None},
            "delete": [k for k, v in writes.items() if v is None],
        }
        append(STORE_ENTRY_TYPE, data)


# ---------------------------------------------------------------------------------------------
# Workers (§3.6)
# ---------------------------------------------------------------------------------------------

_WORKERS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("pi_codemode_workers")


class NoWorkerFree(Exception):
    """No worker became free within 60 seconds (the message is Pi's text)."""


def max_workers() -> int:
    try:
        return max(1, int(os.environ.get("PI_CODEMODE_MAX_WORKERS", DEFAULT_MAX_WORKERS)))
    except ValueError:
        return DEFAULT_MAX_WORKERS


async def run_call_turn(entered: trio.Event) -> None:
    """Let the nested call a script engine just started run until it waits on something (a
    process, a thread, a file lock, the end of the script's turn), as an event loop runs the
    handler of one message and the jobs it queues before the next message: Pi's host starts
    ``tools.x()`` when its message arrives, so what a tool does before its first wait (bash's
    empty first update) comes before the script's next call is even seen. Returns after
    :data:`CALL_TURN_SECONDS` when some task in the process never waits (a stream that always
    has data) or the call waits long before it enters the tool (an approval); only the place
    of such updates among the script's calls depends on time then.

    ``entered``: the call's ``execute_tool(entered=...)`` event. Until it is set the call is
    in pi's own steps before the tool (the checkpoint's look runs in a thread, which Pi does
    not have), which count as part of entering."""
    with trio.move_on_after(CALL_TURN_SECONDS):
        await entered.wait()
        await wait_all_tasks_blocked()


@asynccontextmanager
async def codemode_worker_slot(wait: float = WORKER_WAIT_SECONDS) -> AsyncIterator[None]:
    """Hold one of the process's codemode workers (``PI_CODEMODE_MAX_WORKERS``, default 2,
    shared by every session and both languages; FIFO) while a script runs. Raises
    :class:`NoWorkerFree` after ``wait`` seconds."""
    try:
        limiter = _WORKERS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(max_workers())
        _WORKERS.set(limiter)
    borrower = object()
    acquired = False
    with trio.move_on_after(wait):
        await limiter.acquire_on_behalf_of(borrower)
        acquired = True
    if not acquired:
        raise NoWorkerFree(
            f"No codemode worker became free within {round(wait)} seconds. All "
            f"{limiter.total_tokens} workers, shared by every session in this process, are held "
            "by other scripts. Retry after they finish."
        )
    try:
        yield
    finally:
        limiter.release_on_behalf_of(borrower)


__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "SERVER_TIMEOUT_MS",
    "STORE_ENTRY_TYPE",
    "STORE_STATE_KEY",
    "CallRow",
    "NoWorkerFree",
    "OutputItem",
    "ScriptError",
    "ScriptFailure",
    "ScriptRun",
    "Store",
    "calls_made_text",
    "codemode_worker_slot",
    "commit_store",
    "compact_json",
    "image_data",
    "parse_options_line",
    "script_result",
    "script_timeout_ms",
    "session_store",
    "text_of",
]
