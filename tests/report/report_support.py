"""Sessions for the report tests, and headless Chromium driven by Playwright.

``browser_page`` opens a report in Debian's ``chromium`` (``/usr/bin/chromium``, installed by
``.ci/run``; never Playwright's own browser download) with every request routed and refused:
a report that asked the network for anything fails the test (``page.requests`` lists them).
Without chromium or the ``playwright`` package the test skips with the reason, and fails under
``CI=true``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# ---------------------------------------------------------------------------------------------
# sessions
# ---------------------------------------------------------------------------------------------

HOSTILE = [
    "<script>window.__pwned = 1; alert('script')</script>",
    "</script><script>window.__pwned = 2</script>",
    '<img src=x onerror="window.__pwned = 3">',
    '<a href="javascript:window.__pwned = 4">click me</a>',
    "<!-- <script>window.__pwned = 5</script> -->",
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;http://example.invalid/\x1b\\link\x1b]8;;\x1b\\",
    '<svg onload="window.__pwned = 6"></svg><iframe src="http://127.0.0.1:9/"></iframe>',
    "<style>body{display:none}</style><link rel=stylesheet href=http://127.0.0.1:9/x.css>",
]
"""Tool output that would run script, load something or restyle the page were it markup."""


def png_bytes(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real PNG image of one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    row = b"\x00" + bytes(rgb) * width
    raw = row * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


class SessionBuilder:
    """Writes a Pi v3 session file (the shape ``pi run --session`` writes), entry by entry."""

    def __init__(self, cwd: str = "/work/project") -> None:
        self.lines: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": "11111111-2222-3333-4444-555555555555",
                "timestamp": "2026-12-01T10:00:00.000Z",
                "cwd": cwd,
            }
        ]
        self.leaf: str | None = None
        self.clock = 1_796_119_200_000  # 2026-12-01T10:00:00Z in ms
        self.n = 0

    def _iso(self, ms: int) -> str:
        import datetime

        when = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

    def entry(self, kind: str, **fields: Any) -> None:
        self.n += 1
        entry_id = f"{self.n:08x}"
        self.lines.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": self.leaf,
                "timestamp": self._iso(self.clock),
                **fields,
            }
        )
        self.leaf = entry_id

    def message(self, message: dict[str, Any]) -> None:
        message.setdefault("timestamp", self.clock)
        self.entry("message", message=message)

    def user(self, text: str) -> None:
        self.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(self, text: str, calls: list[tuple[str, str, dict[str, Any]]]) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "toolCall", "id": cid, "name": name, "arguments": args}
            for cid, name, args in calls
        ]
        self.message(
            {
                "role": "assistant",
                "content": content,
                "stopReason": "toolUse" if calls else "stop",
                "api": "scripted",
                "provider": "scripted",
                "model": "test",
            }
        )

    def result(
        self,
        cid: str,
        name: str,
        text: str,
        *,
        after_ms: int,
        is_error: bool = False,
        details: dict[str, Any] | None = None,
        images: list[bytes] = (),  # type: ignore[assignment]
    ) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [
            {"type": "image", "data": base64.b64encode(i).decode(), "mimeType": "image/png"}
            for i in images
        ]
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": cid,
            "toolName": name,
            "content": content,
            "isError": is_error,
            "timestamp": self.clock + after_ms,
        }
        if details is not None:
            message["details"] = details
        self.message(message)

    def advance(self, ms: int) -> None:
        self.clock += ms

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def hostile_session(path: Path) -> Path:
    """One turn whose bash outputs, arguments and text are the :data:`HOSTILE` strings."""
    s = SessionBuilder()
    s.user("show me <b>bold</b> <script>window.__pwned = 7</script>")
    calls = [
        (f"h{i}", "bash", {"command": f"cat hostile{i}.txt # {h}"}) for i, h in enumerate(HOSTILE)
    ]
    s.assistant('<img src=x onerror="window.__pwned = 8">', calls)
    for i, h in enumerate(HOSTILE):
        s.result(f"h{i}", "bash", h, after_ms=10 + i)
    s.advance(100)
    s.assistant("done", [])
    return s.write(path)


def big_session(path: Path, target_bytes: int) -> Path:
    """A session of about ``target_bytes``: turns of 4 parallel calls (bash with long outputs,
    read, edit with a diff, grep), as many as fill the size."""
    s = SessionBuilder()
    s.user("work through the whole project")
    line = "src/module.py:42: some matching line of output with a few words in it\n"
    long_output = line * 300  # ~21 KB
    n = 0
    while _size(s) < target_bytes:
        n += 1
        ids = [f"c{n}-{k}" for k in range(4)]
        s.assistant(
            f"step {n}",
            [
                (ids[0], "bash", {"command": f"make test-{n}"}),
                (ids[1], "read", {"path": f"src/file{n}.py"}),
                (
                    ids[2],
                    "edit",
                    {"path": f"src/file{n}.py", "edits": [{"oldText": "a", "newText": "b"}]},
                ),
                (ids[3], "grep", {"pattern": f"needle{n}"}),
            ],
        )
        s.result(ids[0], "bash", long_output + f"exit {n}", after_ms=120, is_error=n % 7 == 0)
        s.result(ids[1], "read", f"contents of file{n}\n" * 40, after_ms=5)
        s.result(
            ids[2],
            "edit",
            f"Successfully replaced 1 block(s) in src/file{n}.py.",
            after_ms=8,
            details={"diff": " 1 x\n-2 a\n+2 b\n 3 y"},
        )
        s.result(ids[3], "grep", f"src/file{n}.py:1: needle{n}", after_ms=30)
        s.advance(200)
    s.assistant("all done", [])
    return s.write(path)


def _size(s: SessionBuilder) -> int:
    # cached running size: recomputing the whole list each turn would be quadratic
    done = getattr(s, "_sized", 0)
    total = getattr(s, "_size", 0)
    for line in s.lines[done:]:
        total += len(json.dumps(line)) + 1
    s._sized = len(s.lines)  # type: ignore[attr-defined]
    s._size = total  # type: ignore[attr-defined]
    return total


# ---------------------------------------------------------------------------------------------
# the browser
# ---------------------------------------------------------------------------------------------


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}, and CI must install it (.ci/run)")
    pytest.skip(reason)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright with Debian's executable)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    if shutil.which(CHROMIUM) is None and not os.path.exists(CHROMIUM):
        _missing(f"chromium is not installed ({CHROMIUM})")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class OpenedReport:
    """A report opened in a page: ``page``, the refused ``requests``, the ``dialogs`` and
    ``errors`` the page raised, and ``console`` messages."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []


@contextlib.contextmanager
def open_report(browser: Any, html: Path, *, timeout_ms: float = 30_000) -> Iterator[OpenedReport]:
    """Open ``html`` from disk; every request but the file itself is refused and recorded;
    returns once the page says it is rendered (``body[data-ready="1"]``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    opened = OpenedReport(page)
    target = html.resolve().as_uri()

    def route(r: Any) -> None:
        if r.request.url == target:
            r.continue_()
        else:
            opened.requests.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.on("console", lambda m: opened.console.append(m.text))
    try:
        page.goto(target)
        page.wait_for_selector("body[data-ready='1']", state="attached", timeout=timeout_ms)
        yield opened
    finally:
        context.close()
