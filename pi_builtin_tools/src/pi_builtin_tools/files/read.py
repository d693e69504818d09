"""The ``read`` tool (``docs/reference/tools.md``).

Text files come back from line ``offset`` (1-indexed), at most ``limit`` lines, cut by
:func:`~pi_builtin_tools.files.truncate.truncate_head` rules (2000 lines or 50KB, never half a line)
with a notice giving the next offset. The file is streamed in chunks (``FileOperations.read_bytes``,
or a backend's optional ``read_head``/``scan_bytes``: the local backend resolves, stats and reads
the start in one worker-thread call and scans the rest in another, into one reused buffer): only
the selected lines (at most 50KB of them) are kept, so reading lines 1,000,000–1,002,000 of a 1 GB
file holds a few megabytes at most. Images (by magic bytes)
come back as image blocks, resized to the configured limits. Non-UTF-8 text is decoded (UTF-16
with BOM, which is not shown; Windows-1252/Latin-1) and binary files are refused with a short
description. ``offset``/``limit`` must be whole numbers (>= 0 and >= 1,
:func:`~pi_builtin_tools.catalog.args.integer_arg`).
"""

from __future__ import annotations

import base64
import codecs
import errno
import math
import re
from dataclasses import dataclass, field
from typing import Any, cast

import trio

from pi_builtin_tools.catalog.args import integer_arg
from pi_builtin_tools.catalog.config import read_settings
from pi_builtin_tools.files.encoding import (
    SNIFF_BYTES,
    TextEncoding,
    bom_length,
    describe_binary,
    detect_encoding,
)
from pi_builtin_tools.files.fs_errors import (
    check_no_nul,
    fs_error,
    not_regular_file_error,
    show_path,
)
from pi_builtin_tools.files.image_processing import (
    IMAGE_SNIFF_BYTES,
    ImageDecodeError,
    ImageResizeOptions,
    detect_image_mime,
    dimension_note,
    process_image,
)
from pi_builtin_tools.files.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    format_size,
    head_from_lines,
)
from pi_core import (
    AgentToolResult,
    FileOperations,
    ImageContent,
    OnUpdate,
    PathArgument,
    TextContent,
    ToolDefinition,
    ToolError,
    js_number_to_string,
)
from pi_core.backends import FileStat, resolve_existing_path

READ_DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). "
    "Images are sent as attachments. For text files, output is truncated to "
    f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
    "Use offset/limit for large files. When you need the full file, continue with offset until "
    "complete."
)

READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to read (relative or absolute)",
        },
        "offset": {
            "type": "number",
            "description": "Line number to start reading from (1-indexed)",
        },
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
}

NON_VISION_NOTE = (
    "[Current model does not support images. The image will be omitted from this request.]"
)
IMAGE_TOO_LARGE_NOTE = "[Image omitted: could not be resized below the inline image size limit.]"
IMAGE_UNDECODABLE_NOTE = (
    "[Image omitted: the file could not be decoded as an image (corrupt or truncated).]"
)
"""Replaces the image when Pillow cannot decode it (the reference says "could not be resized")."""
WHOLE_FILE_LIMIT = 4 * 1024 * 1024
"""Files up to this size are read in one call; larger ones are streamed in chunks."""
CHUNK_SIZE = 1024 * 1024
"""Bytes per ``read_bytes`` call when streaming."""


@dataclass(frozen=True)
class ReadToolOptions:
    """Options of the read tool.

    ``auto_resize_images``: fit images within ``image_resize`` (default on).
    ``supports_images``: ``False`` when the model takes no images: a note replaces the image
    block; ``None`` asks the session context (``ctx.model.input`` lacking ``"image"``).
    ``chunk_size``/``whole_file_limit``: streaming parameters (bytes).
    """

    auto_resize_images: bool = True
    image_resize: ImageResizeOptions = field(default_factory=ImageResizeOptions)
    supports_images: bool | None = None
    chunk_size: int = CHUNK_SIZE
    whole_file_limit: int = WHOLE_FILE_LIMIT

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ReadToolOptions:
        """Options from ``[tools.read]`` of the pi config: ``auto_resize_images``,
        ``supports_images``, ``max_image_width``, ``max_image_height``, ``max_image_bytes``,
        ``jpeg_quality``.

        Raises :class:`~pi_core._errors.ConfigError` for a bad value or an unknown key
        (:func:`~pi_builtin_tools.catalog.config.read_settings`)."""
        settings = read_settings(config)
        resize = ImageResizeOptions(
            max_width=settings.max_image_width,
            max_height=settings.max_image_height,
            max_bytes=settings.max_image_bytes or ImageResizeOptions.max_bytes,
            jpeg_quality=settings.jpeg_quality,
        )
        return cls(
            auto_resize_images=settings.auto_resize_images,
            image_resize=resize,
            supports_images=settings.supports_images,
        )


def _slice_index(value: float, length: int) -> int:
    """JavaScript ``Array.prototype.slice`` index: truncated; negative counts from the end."""
    index = math.trunc(value)
    if index < 0:
        return max(length + index, 0)
    return min(index, length)


@dataclass
class _Selection:
    """What a streaming pass over the file's UTF-8 bytes collects (see :func:`_scan`)."""

    total_newlines: int = 0
    prefix: bytearray = field(default_factory=bytearray)
    selected_bytes: int = 0
    selected_newlines: int = 0
    first_line_bytes: int = 0
    first_line_done: bool = False
    last_byte: int | None = None


class _Scanner:
    """Splits a stream of UTF-8 bytes into JS ``split("\\n")`` lines and keeps the selection
    ``lines[start:end]`` joined by ``\\n``: its size, line count, first line size and its first
    ``cap`` bytes (``end=None``: to the end)."""

    def __init__(self, start: int, end: int | None, cap: int) -> None:
        self.start = start
        self.end = end
        self.cap = cap
        self.line = 0
        self.sel = _Selection()

    def _take(self, chunk: bytes | bytearray, start: int, stop: int, newlines: int) -> None:
        """Select ``chunk[start:stop]``, which holds ``newlines`` newlines (indices, so a
        chunk is never copied: only what the prefix keeps is)."""
        sel = self.sel
        if start >= stop:
            return
        sel.selected_bytes += stop - start
        sel.selected_newlines += newlines
        if not sel.first_line_done:
            cut = chunk.find(b"\n", start, stop)
            if cut < 0:
                sel.first_line_bytes += stop - start
            else:
                sel.first_line_bytes += cut - start
                sel.first_line_done = True
        room = self.cap - len(sel.prefix)
        if room > 0:
            sel.prefix += chunk[start : min(stop, start + room)]
        sel.last_byte = chunk[stop - 1]

    def _skip_newlines(self, chunk: bytes | bytearray, pos: int, count: int) -> int:
        """Position just after the ``count``-th newline at or after ``pos`` (it exists)."""
        for _ in range(count):
            pos = chunk.index(b"\n", pos) + 1
        return pos

    def feed(self, chunk: bytes | bytearray) -> None:
        """Take the next chunk (it may be a reused buffer: nothing keeps a reference)."""
        pos, size, sel = 0, len(chunk), self.sel
        while pos < size:
            if self.line < self.start:
                need = self.start - self.line
                available = chunk.count(b"\n", pos)
                if available < need:
                    self.line += available
                    sel.total_newlines += available
                    return
                pos = self._skip_newlines(chunk, pos, need)
                self.line += need
                sel.total_newlines += need
                continue
            available = chunk.count(b"\n", pos)
            if self.end is None or self.line < self.end:
                inside = available if self.end is None else self.end - 1 - self.line
                if available <= inside:
                    self._take(chunk, pos, size, available)
                    self.line += available
                    sel.total_newlines += available
                    return
                stop = self._skip_newlines(chunk, pos, inside + 1) - 1
                self._take(chunk, pos, stop, inside)
                self.line += inside + 1
                sel.total_newlines += inside + 1
                pos = stop + 1
                continue
            self.line += available
            sel.total_newlines += available
            return

    @property
    def counting(self) -> bool:
        """Whether the rest of the input is only counted: past the selection's end, or (no
        end) inside it with its first line and its kept prefix complete."""
        if self.end is not None:
            return self.line >= self.end
        sel = self.sel
        return self.line >= self.start and sel.first_line_done and len(sel.prefix) >= self.cap

    def feed_counted(self, size: int, newlines: int, last_byte: int | None) -> None:
        """Take ``size`` bytes holding ``newlines`` newlines and ending with ``last_byte``, as
        :meth:`feed` of them would (only while :attr:`counting`)."""
        assert self.counting
        self.line += newlines
        self.sel.total_newlines += newlines
        if self.end is None and size:
            self.sel.selected_bytes += size
            self.sel.selected_newlines += newlines
            self.sel.last_byte = last_byte

    def finish(self) -> _Selection:
        return self.sel


COUNT_REST_MIN_BYTES = 16 * 1024 * 1024
"""A UTF-8 file whose rest, once the selection is taken, holds at least this many bytes has
that rest counted by the backend's optional ``count_newlines`` (the local backend has
``wc`` count it) instead of fed to the scanner chunk by chunk."""


async def _scan(
    ops: FileOperations,
    path: str,
    encoding: TextEncoding,
    first: bytes,
    complete: bool,
    options: ReadToolOptions,
    start: int,
    end: int | None,
    info: FileStat | None = None,
) -> _Selection:
    """Feed the file's text, as UTF-8 bytes, chunk by chunk through a :class:`_Scanner`
    (``first`` is the start already read; ``complete``: it is the whole file; ``info``: the
    file the start was read from: its size, and its ``key`` for the backend to check that
    later opens find the same file, ``OSError(ESTALE)`` otherwise)."""
    size = info.size if info is not None else 0
    same: dict[str, Any] = {"same_as": info} if info is not None and info.key else {}
    scanner = _Scanner(start, end, DEFAULT_MAX_BYTES + 1)
    decoder = None if encoding.is_utf8 else codecs.getincrementaldecoder(encoding.codec)("replace")
    # A UTF-16/32 BOM is not shown (a UTF-8 one stays, as Pi shows it); the file is unchanged.
    strip_bom = decoder is not None and bom_length(first, encoding) > 0

    def feed(raw: bytes | bytearray, final: bool) -> None:
        nonlocal strip_bom
        if decoder is None:
            scanner.feed(raw)
            return
        text = decoder.decode(raw, final=final)
        if strip_bom and text:
            text, strip_bom = text.removeprefix("\ufeff"), False
        scanner.feed(text.encode("utf-8", "replace"))

    feed(first, complete)
    offset = len(first)
    scan_bytes = None if complete else getattr(ops, "scan_bytes", None)
    count_newlines = None if decoder is not None else getattr(ops, "count_newlines", None)
    reached = offset

    def consume(chunk: bytearray) -> bool:
        """Feed ``chunk``; true (stop) when the large rest can be counted instead."""
        nonlocal reached
        feed(chunk, False)
        reached += len(chunk)
        return (
            count_newlines is not None
            and size - reached >= COUNT_REST_MIN_BYTES
            and scanner.counting
        )

    if callable(scan_bytes) and await scan_bytes(path, offset, options.chunk_size, consume, **same):
        if callable(count_newlines) and scanner.counting and size - reached >= COUNT_REST_MIN_BYTES:
            counted = await count_newlines(path, reached, options.chunk_size, **same)
            if counted is None:  # not counted after all: fed as before
                await scan_bytes(
                    path, reached, options.chunk_size, lambda c: feed(c, False), **same
                )
            else:
                scanner.feed_counted(*counted)
        feed(b"", True)
        return scanner.finish()
    while not complete:
        chunk = await ops.read_bytes(path, offset, options.chunk_size)
        complete = not chunk
        feed(chunk, complete)
        offset += len(chunk)
    return scanner.finish()


def _truncation(sel: _Selection) -> TruncationResult:
    """:func:`truncate_head` of the selection, from what the scan kept (same result)."""
    prefix = bytes(sel.prefix)
    more = sel.selected_bytes > len(prefix)
    if sel.selected_bytes == 0:
        total_lines = 0
    else:
        total_lines = sel.selected_newlines + 1 - (1 if sel.last_byte == 0x0A else 0)
    if not more and total_lines <= DEFAULT_MAX_LINES and sel.selected_bytes <= DEFAULT_MAX_BYTES:
        lines: list[str] = []  # within both limits: the whole selection is the content
    else:
        pieces = prefix.split(b"\n") if prefix else []
        if more:
            pieces.pop()
        elif pieces and prefix.endswith(b"\n"):
            pieces.pop()
        lines = [piece.decode("utf-8", "replace") for piece in pieces]
    return head_from_lines(
        lines,
        whole="" if more else prefix.decode("utf-8", "replace"),
        total_lines=total_lines,
        total_bytes=sel.selected_bytes,
        first_line_bytes=sel.first_line_bytes,
        more=more,
    )


def _field(obj: Any, *names: str) -> Any:
    """``obj.name`` or ``obj[name]`` for the first of ``names`` present (``None`` if none)."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if obj is not None and not isinstance(obj, dict) and hasattr(obj, name):
            return getattr(obj, name)
    return None


def _resize_options(options: ReadToolOptions, ctx: Any) -> ImageResizeOptions:
    """``ctx.model.inputLimits.images.resize`` when present (as Pi), else the options."""
    model = _field(ctx, "model")
    limits = _field(_field(_field(model, "inputLimits", "input_limits"), "images"), "resize")
    if limits is None:
        return options.image_resize
    base = options.image_resize
    return ImageResizeOptions(
        max_width=int(_field(limits, "maxWidth", "max_width") or base.max_width),
        max_height=int(_field(limits, "maxHeight", "max_height") or base.max_height),
        max_bytes=int(_field(limits, "maxBytes", "max_bytes") or base.max_bytes),
        jpeg_quality=int(_field(limits, "jpegQuality", "jpeg_quality") or base.jpeg_quality),
    )


def _wants_images(options: ReadToolOptions, ctx: Any) -> bool:
    if options.supports_images is not None:
        return options.supports_images
    inputs = _field(_field(ctx, "model"), "input")
    return inputs is None or "image" in inputs


async def _read_image(
    ops: FileOperations, path: str, mime: str, options: ReadToolOptions, ctx: Any
) -> AgentToolResult:
    data = await ops.read_bytes(path)
    wants = _wants_images(options, ctx)
    if options.auto_resize_images or mime == "image/bmp":
        try:
            processed = await trio.to_thread.run_sync(
                process_image, data, mime, _resize_options(options, ctx)
            )
        except ImageDecodeError:
            processed, omitted = None, IMAGE_UNDECODABLE_NOTE
        else:
            omitted = IMAGE_TOO_LARGE_NOTE
        if processed is None:
            text = f"Read image file [{mime}]\n{omitted}"
            if not wants:
                text += f"\n{NON_VISION_NOTE}"
            return AgentToolResult(content=[TextContent(text=text)])
        text = f"Read image file [{processed.mime_type}]"
        if processed.converted_from:
            text += f"\n[Image converted from {processed.converted_from} to {processed.mime_type}.]"
        note = dimension_note(processed)
        if note:
            text += f"\n{note}"
        image = ImageContent(data=processed.data, mime_type=processed.mime_type)
    else:
        text = f"Read image file [{mime}]"
        image = ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime)
    if not wants:
        return AgentToolResult(content=[TextContent(text=f"{text}\n{NON_VISION_NOTE}")])
    return AgentToolResult(content=[TextContent(text=text), image])


async def _read_head(
    ops: FileOperations, raw_path: str, cwd: str, opts: ReadToolOptions
) -> tuple[str, FileStat | OSError, bytes | OSError | None]:
    """The resolved path, its ``stat`` (or the error of it) and the start of the file (the
    whole file up to ``opts.whole_file_limit``, else ``opts.chunk_size`` bytes; ``None`` when
    not read; the ``OSError`` of the read): one worker-thread call with a backend that has
    ``read_head`` (:class:`~pi_core.backends.LocalFileOperations`), else ``stat`` probes of
    the path candidates, ``stat`` and ``read_bytes``."""
    read_head = getattr(ops, "read_head", None)
    if callable(read_head):
        head = await read_head(
            raw_path, cwd, whole_limit=opts.whole_file_limit, head_size=opts.chunk_size
        )
        if head is not None:
            return cast("tuple[str, FileStat | OSError, bytes | OSError | None]", head)
    path = await resolve_existing_path(raw_path, cwd, ops, for_read=True)
    try:
        info = await ops.stat(path)
    except OSError as exc:
        return path, exc, None
    if info.kind in ("directory", "other"):
        return path, info, None
    whole = 0 < info.size <= opts.whole_file_limit
    try:
        return path, info, await ops.read_bytes(path, 0, None if whole else opts.chunk_size)
    except OSError as exc:
        return path, info, exc


READ_ATTEMPTS = 3
"""How many times a read starts again when the file is replaced by another one while it is
read (its later opens find another file): then ``ESTALE``."""


class _Replaced(Exception):
    """The file ``path`` was replaced between two opens of one read."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


async def read_file(
    raw_path: str,
    cwd: str,
    ops: FileOperations,
    *,
    offset: float | None = None,
    limit: float | None = None,
    options: ReadToolOptions | None = None,
    ctx: Any = None,
) -> AgentToolResult:
    """What the read tool returns for ``path``/``offset``/``limit``; raises
    :class:`~pi_core._errors.ToolError` with Pi's texts on failure.

    A large file is opened more than once (its start, its rest); when a backend can tell
    (``FileStat.key``) that the name holds another file at a later open (replaced by a
    rename meanwhile), the read starts again, so the result never mixes two files; after
    :data:`READ_ATTEMPTS` tries, ``ESTALE``."""
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return await _read_file_once(raw_path, cwd, ops, offset, limit, options, ctx)
        except _Replaced:
            continue
    try:
        return await _read_file_once(raw_path, cwd, ops, offset, limit, options, ctx)
    except _Replaced as replaced:
        cause = replaced.__cause__
        assert isinstance(cause, OSError)
        raise fs_error(cause, "read", replaced.path) from cause


async def _read_file_once(
    raw_path: str,
    cwd: str,
    ops: FileOperations,
    offset: float | None,
    limit: float | None,
    options: ReadToolOptions | None,
    ctx: Any,
) -> AgentToolResult:
    opts = options or ReadToolOptions()
    offset = integer_arg("offset", offset, minimum=0)  # 0 reads from the start, as Pi does
    limit = integer_arg("limit", limit, minimum=0)  # 0 selects no line, as Pi 1.6 does
    check_no_nul(raw_path)
    path, info, head = await _read_head(ops, raw_path, cwd, opts)
    if isinstance(info, OSError):
        raise fs_error(info, "access", path) from info
    if info.kind == "directory":
        raise ToolError("EISDIR: illegal operation on a directory, read")
    if info.kind == "other":
        raise not_regular_file_error("read", raw_path)
    if isinstance(head, IsADirectoryError):
        raise ToolError("EISDIR: illegal operation on a directory, read") from head
    if isinstance(head, OSError):
        if head.errno == errno.EINVAL:  # replaced by a special file since the stat
            raise not_regular_file_error("read", raw_path) from head
        syscall = {errno.EACCES: "access", errno.EAGAIN: "read"}.get(head.errno or 0, "open")
        raise fs_error(head, syscall, path) from head
    assert head is not None
    first = head
    complete = 0 < info.size <= opts.whole_file_limit or len(first) < opts.chunk_size

    mime = detect_image_mime(first[:IMAGE_SNIFF_BYTES])
    if mime is not None:
        return await _read_image(ops, path, mime, opts, ctx)

    encoding = detect_encoding(
        first if complete else first[: max(SNIFF_BYTES, 65536)], complete=complete
    )
    if encoding is None:
        raise ToolError(
            describe_binary(show_path(raw_path), first[:SNIFF_BYTES], max(info.size, len(first)))
        )

    start_value: float = max(0, offset - 1) if offset else 0
    start = math.trunc(start_value)
    end: int | None = None
    end_value: float | None = None
    if limit is not None:
        end_value = start_value + limit
        if end_value < 0 or math.trunc(end_value) < 0:
            try:
                counted = await _scan(ops, path, encoding, first, complete, opts, 0, 0, info)
            except OSError as exc:
                if exc.errno == errno.ESTALE:
                    raise _Replaced(path) from exc
                raise
            total = counted.total_newlines + 1
            end_value = min(end_value, total)
            end = _slice_index(end_value, total)
        else:
            end = math.trunc(end_value)

    try:
        sel = await _scan(ops, path, encoding, first, complete, opts, start, end, info)
    except OSError as exc:
        if exc.errno == errno.ESTALE:
            raise _Replaced(path) from exc
        raise fs_error(exc, "read", path) from exc
    total_lines = sel.total_newlines + 1
    if start_value >= total_lines:
        raise ToolError(
            f"Offset {js_number_to_string(offset or 0)} is beyond end of file ({total_lines} lines total)"
        )
    truncation = _truncation(sel)
    start_display = start_value + 1
    details: dict[str, Any] | None = None
    if truncation.first_line_exceeds_limit:
        text = (
            f"[Line {js_number_to_string(start_display)} is {format_size(sel.first_line_bytes)}, exceeds "
            f"{format_size(DEFAULT_MAX_BYTES)} limit. Use bash: sed -n '{js_number_to_string(start_display)}p' "
            f"{raw_path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": truncation.to_details()}
    elif truncation.truncated:
        end_display = start_display + truncation.output_lines - 1
        shown = f"{js_number_to_string(start_display)}-{js_number_to_string(end_display)} of {total_lines}"
        limit_note = (
            ""
            if truncation.truncated_by == "lines"
            else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        )
        text = (
            f"{truncation.content}\n\n[Showing lines {shown}{limit_note}. "
            f"Use offset={js_number_to_string(end_display + 1)} to continue.]"
        )
        details = {"truncation": truncation.to_details()}
    elif limit is not None and end_value is not None:
        user_limited = min(end_value, total_lines) - start_value
        if start_value + user_limited < total_lines:
            remaining = total_lines - (start_value + user_limited)
            text = (
                f"{truncation.content}\n\n[{js_number_to_string(remaining)} more lines in file. "
                f"Use offset={js_number_to_string(start_value + user_limited + 1)} to continue.]"
            )
        else:
            text = truncation.content
    else:
        text = truncation.content
    if not encoding.is_utf8 and encoding.ascii_compatible:
        text += f"\n\n[Decoded as {encoding.label}: the file is not valid UTF-8.]"
    result = AgentToolResult(content=[TextContent(text=text)])
    if details is not None:
        result.details = details
    return result


_CONTINUE_NOTICE = re.compile(
    r"\[(?:\d+ more lines in file\. Use offset=\d+ to continue|Showing lines \d+-\d+ of \d+)"
    r"[^\]]*\]\s*$"
)


def recorded_file_text(args: Any, result: AgentToolResult) -> tuple[str, str] | None:
    """``(path, text)`` of a recorded read that returned a whole text file: no ``offset`` or
    ``limit``, not an error, only text blocks, no truncation (neither ``details.truncation`` nor
    a continuation notice); else ``None`` (``pi replay --verify --seed-from-reads``)."""
    if not isinstance(args, dict) or result.is_error or not isinstance(args.get("path"), str):
        return None
    if args.get("offset") is not None or args.get("limit") is not None:
        return None
    if not result.content or not all(isinstance(b, TextContent) for b in result.content):
        return None
    details = result.details if isinstance(result.details, dict) else {}
    if details.get("truncation"):
        return None
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    if _CONTINUE_NOTICE.search(text):
        return None
    return args["path"], text


READ_OUTPUT_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "required": ["type", "data", "mimeType", "note"],
            "properties": {
                "type": {"type": "string", "const": "image"},
                "data": {"type": "string"},
                "mimeType": {"type": "string"},
                "note": {"type": "string"},
            },
        },
    ]
}
"""JSON Schema of read's ``structured_content`` (Pi 1.6.0's ``outputSchema``)."""


def read_structured_content(result: AgentToolResult) -> Any:
    """What a successful read gives programs: the text of the first text block, or for an image
    ``{"type": "image", "data", "mimeType", "note"}`` with the text block as ``note``."""
    text = next((b.text for b in result.content if isinstance(b, TextContent)), "")
    image = next((b for b in result.content if isinstance(b, ImageContent)), None)
    if image is None:
        return text
    return {"type": "image", "data": image.data, "mimeType": image.mime_type, "note": text}


def create_read_tool_definition(
    cwd: str, operations: FileOperations, *, options: ReadToolOptions | None = None
) -> ToolDefinition:
    """The ``read`` tool for the session ``cwd`` doing its I/O through ``operations``."""
    opts = options or ReadToolOptions()

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None, ctx: Any = None
    ) -> AgentToolResult:
        result = await read_file(
            params["path"],
            cwd,
            operations,
            offset=params.get("offset"),
            limit=params.get("limit"),
            options=opts,
            ctx=ctx,
        )
        result.structured_content = read_structured_content(result)
        return result

    def render_call(args: Any) -> str:
        path = args.get("path", "") if isinstance(args, dict) else ""
        offset, limit = (
            (args.get("offset"), args.get("limit")) if isinstance(args, dict) else (None, None)
        )
        if offset is None and limit is None:
            return f"read {path}"
        first = offset or 1
        last = f"-{first + limit - 1}" if limit is not None else ""
        return f"read {path}:{first}{last}"

    return ToolDefinition(
        name="read",
        label="read",
        description=READ_DESCRIPTION,
        parameters=READ_PARAMETERS,
        execute=execute,
        prompt_snippet="Read file contents",
        prompt_guidelines=["Use read to examine files instead of cat or sed."],
        render_call=render_call,
        verify="text",
        path_arguments=(PathArgument("path", read=True),),
        seed_file=recorded_file_text,
        output_schema=READ_OUTPUT_SCHEMA,
        replay="safe",
        constrained_sampling={"type": "json_schema", "strict": "prefer"},
    )


__all__ = [
    "READ_DESCRIPTION",
    "READ_PARAMETERS",
    "ReadToolOptions",
    "create_read_tool_definition",
    "read_file",
]
