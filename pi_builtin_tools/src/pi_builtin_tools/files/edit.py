"""The ``edit`` tool: exact-text replacement in one file (``docs/reference/tools.md``).

``create_edit_tool_definition(cwd, operations)`` gives the tool. A call takes ``path`` and
``edits: [{oldText, newText}]``; every ``oldText`` is located in the original file (exact first,
then the fuzzy fallback), must be unique there and must not overlap another; then all edits are
written at once, or none. The matching and the texts live in :mod:`pi_builtin_tools.edit_diff`.

Execution (inside the file mutation queue of the file, so edits and writes of one file run one
after another):

1. resolve the path and key the queue as every mutating tool does
   (:func:`pi_core._backend_kit.mutation_queue.with_tool_path_mutation_queue`: the exact name first, then
   special spaces as U+0020; the same file as ``write`` would replace);
2. check the file can be read and written (``Could not edit file: {path}. Error code: {code}.``)
   and is a regular file (``Cannot edit {path}: not a regular file (a device, FIFO or
   socket).``: a FIFO is never opened, so the call cannot block), and read it: one worker-thread
   call when the backend has ``read_for_update``;
3. UTF-8 text without any CR (BOM or not) whose every ``oldText`` matches exactly is edited on
   its **bytes** (up to :data:`MAX_EDIT_LARGE_FILE_BYTES`, 128 MiB): matched and counted with
   ``bytes.find``/``count``, written as head, new text and tail pieces, diffed over the changed
   lines only, so memory is the file once. Anything else (CRLF, other encodings, the fuzzy
   match) is **decoded** (at most :data:`MAX_EDIT_FILE_BYTES`, 8 MiB, and
   :data:`MAX_EDIT_FILE_LINES`, 400,000 lines; a larger file is refused with ``Could not edit
   file: {path}. It is larger than edit handles (8.0MB or 400000 lines; up to 128.0MB for UTF-8
   text without CR line endings whose old texts match exactly); change it with bash (sed, a
   script) instead.``) and classified (:mod:`pi_builtin_tools.file_encoding`): binary files are
   refused with their size and kind; UTF-8 (with or without BOM), UTF-16/32 with BOM and
   Windows-1252/Latin-1 are decoded, and refused unless they encode back to the same bytes.
   Both give the same texts and errors (``tests/builtin_tools/test_edit_large.py``);
4. apply the edits (line endings, BOM and every untouched byte kept);
5. encode back in the file's encoding (refused with a clear error if the new text has a
   character the encoding cannot hold) and replace the file atomically through
   ``operations.write_bytes`` (``write_chunks`` for a large file). The write is shielded: on
   abort it finishes, then the call reports ``Operation aborted``;
6. return ``Successfully replaced N block(s) in {path}.`` with ``details``
   ``{diff, patch, firstChangedLine}``.
"""

from __future__ import annotations

import codecs
import errno
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from pi_builtin_tools.file_access import check_access, check_write_bits
from pi_builtin_tools.file_encoding import (
    SNIFF_BYTES,
    TextEncoding,
    binary_kind,
    decode_text,
    detect_encoding,
    encode_text,
)
from pi_builtin_tools.fs_errors import (
    check_no_surrogate,
    error_code,
    node_error_message,
    not_regular_file_error,
    show_path,
)
from pi_builtin_tools.truncate import format_size
from pi_core import (
    AgentToolResult,
    FileOperations,
    OnUpdate,
    PathArgument,
    TextContent,
    ToolDefinition,
    ToolError,
    parse_json,
)
from pi_core.backends import (
    resolve_existing_path,
    stage_file_write,
    staged_file_content,
    with_tool_path_mutation_queue,
)

if TYPE_CHECKING:
    from pi_builtin_tools.edit_diff import EditError as EditError
    from pi_builtin_tools.edit_diff import LineDiff

_FROM_EDIT_DIFF = frozenset(
    {
        "DiffTooLarge",
        "EditError",
        "LineDiff",
        "apply_edits",
        "count_occurrences",
        "format_diff_string",
        "format_unified_patch",
        "line_diff",
        "line_diff_of_region",
        "normalize_to_lf",
        "_duplicate_error",
        "_empty_old_text_error",
        "_no_change_error",
    }
)
"""Names of :mod:`pi_builtin_tools.edit_diff` this module gives too (``EditError`` is public
here). The matching and diff module is imported by the first edit, not when the plugin registers
the tool: this module's functions import what they use, and these names are looked up in it on
first access (``__getattr__``)."""


def __getattr__(name: str) -> Any:
    if name in _FROM_EDIT_DIFF:
        from pi_builtin_tools import edit_diff

        return getattr(edit_diff, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


EDIT_DESCRIPTION = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
    "non-overlapping region of the original file. If two changes affect the same block or nearby "
    "lines, merge them into one edit instead of emitting overlapping edits. Do not include large "
    "unchanged regions just to connect distant changes."
)

EDIT_PROMPT_SNIPPET = (
    "Make precise file edits with exact text replacement, including multiple disjoint edits in "
    "one call"
)

EDIT_PROMPT_GUIDELINES = [
    "Use edit for precise changes (edits[].oldText must match exactly)",
    "When changing multiple separate locations in one file, use one edit call with multiple "
    "entries in edits[] instead of multiple edit calls",
    "Each edits[].oldText is matched against the original file, not after earlier edits are "
    "applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
    "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad "
    "with large unchanged regions.",
]

EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to edit (relative or absolute)",
        },
        "edits": {
            "type": "array",
            "description": (
                "One or more targeted replacements. Each edit is matched against the original "
                "file, not incrementally. Do not include overlapping or nested edits. If two "
                "changes touch the same block or nearby lines, merge them into one edit instead."
            ),
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": (
                            "Exact text for one targeted replacement. It must be unique in the "
                            "original file and must not overlap with any other edits[].oldText "
                            "in the same call."
                        ),
                    },
                    "newText": {
                        "type": "string",
                        "description": "Replacement text for this targeted edit.",
                    },
                },
                "required": ["oldText", "newText"],
            },
        },
    },
    "required": ["path", "edits"],
}
"""The public schema: no legacy top-level ``oldText``/``newText``."""

_EDIT_KEYS = ("oldText", "newText")


# --------------------------------------------------------------------------------------------
# prepare_arguments: the legacy shim
# --------------------------------------------------------------------------------------------


def _parse_json_text(text: str) -> Any:
    """``text`` parsed as JSON, tolerating raw control characters inside strings (models put
    real newlines and tabs in them) and one extra level of string encoding; ``None`` when it is
    not JSON."""
    try:
        value = parse_json(text, strict=False)
    except ValueError:
        return None
    if isinstance(value, str):
        try:
            value = parse_json(value, strict=False)
        except ValueError:
            return None
    return value


def _clean_edit(item: Any) -> Any:
    """An ``edits[]`` element with JSON-string items parsed and keys other than
    ``oldText``/``newText`` dropped; the element itself when it needs neither."""
    if isinstance(item, str):
        parsed = _parse_json_text(item)
        if isinstance(parsed, dict):
            item = parsed
        else:
            return item
    if isinstance(item, dict) and any(key not in _EDIT_KEYS for key in item):
        return {key: item[key] for key in _EDIT_KEYS if key in item}
    return item


def prepare_edit_arguments(args: Any) -> Any:
    """Repair the shapes models send before schema validation.

    * not a dict: returned unchanged;
    * ``edits`` as a JSON string: parsed (raw control characters allowed); an array is used, an
      object becomes a one-element array; text that is not JSON is left for validation to reject;
    * ``edits`` as a single edit object: wrapped in an array;
    * ``edits[]`` elements that are JSON strings of an object are parsed; keys other than
      ``oldText``/``newText`` are dropped (only changed elements are replaced);
    * top-level ``oldText`` and ``newText`` (both strings, the legacy form): appended as the last
      edit and removed from the top level.

    The input is never mutated: a changed dict is a new one; clean input is returned as is (the
    same object).
    """
    if not isinstance(args, dict):
        return args
    result = args
    edits = args.get("edits")
    new_edits = edits
    if isinstance(edits, str):
        parsed = _parse_json_text(edits)
        if isinstance(parsed, list):
            new_edits = parsed
        elif isinstance(parsed, dict):
            new_edits = [parsed]
    elif isinstance(edits, dict) and any(key in edits for key in _EDIT_KEYS):
        new_edits = [edits]
    if isinstance(new_edits, list):
        cleaned = [_clean_edit(item) for item in new_edits]
        if any(a is not b for a, b in zip(cleaned, new_edits, strict=True)):
            new_edits = cleaned
    if new_edits is not edits:
        result = {**args, "edits": new_edits}
    old_text, new_text = result.get("oldText"), result.get("newText")
    if isinstance(old_text, str) and isinstance(new_text, str):
        current = result.get("edits")
        merged = [*current] if isinstance(current, list) else []
        merged.append({"oldText": old_text, "newText": new_text})
        result = {k: v for k, v in result.items() if k not in _EDIT_KEYS}
        result["edits"] = merged
    return result


def validate_edit_input(params: Any) -> tuple[str, list[dict[str, str]]]:
    """``(path, edits)`` from validated arguments; ``edits`` must be a non-empty array of
    ``{oldText, newText}`` strings."""
    edits = params.get("edits") if isinstance(params, dict) else None
    if not isinstance(edits, list) or not edits:
        raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
    path = params.get("path")
    if not isinstance(path, str):
        raise ToolError("Edit tool input is invalid. path must be a string.")
    for i, edit in enumerate(edits):
        if not (
            isinstance(edit, dict)
            and isinstance(edit.get("oldText"), str)
            and isinstance(edit.get("newText"), str)
        ):
            raise ToolError(
                f"Edit tool input is invalid. edits[{i}] must have string oldText and newText."
            )
    return path, edits


# --------------------------------------------------------------------------------------------
# File access
# --------------------------------------------------------------------------------------------


def _access_error(path: str, exc: Exception) -> ToolError:
    """Pi's ``Could not edit file: {path}. Error code: {code}.`` (an error with a code) or
    ``Could not edit file: {path}. Error: {message}.``; a backend's own ``ToolError`` (an SSH
    backend that cannot connect) as it is."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, OSError) and exc.errno is not None:
        return ToolError(f"Could not edit file: {show_path(path)}. Error code: {error_code(exc)}.")
    return ToolError(f"Could not edit file: {show_path(path)}. Error: {exc}.")


def _read_error(exc: OSError, absolute: str, path: str) -> ToolError:
    if isinstance(exc, IsADirectoryError):
        return ToolError(node_error_message(exc, "read", ""))
    if exc.errno == errno.EINVAL:  # the backend refused a device, FIFO or socket
        return not_regular_file_error("edit", path)
    return ToolError(node_error_message(exc, "open", absolute))


MAX_EDIT_FILE_BYTES = 8 * 1024 * 1024
"""Largest file edit decodes whole (8 MiB): that path holds the file, its text, the new text and
their line-ending and fuzzy views at once (about six times the file's size, plus ~200 bytes a
line). It serves every file up to this size, and larger files that :data:`MAX_EDIT_LARGE_FILE_BYTES`
cannot take."""

MAX_EDIT_FILE_LINES = 400_000
"""Most lines (newlines) of a file edit decodes whole; see :data:`MAX_EDIT_FILE_BYTES`."""

MAX_EDIT_LARGE_FILE_BYTES = 128 * 1024 * 1024
"""Largest file edit changes (128 MiB), when it is UTF-8 (BOM or not) without any CR and every
``oldText`` matches exactly: such a file is edited as bytes (matched, counted and written as head,
new text and tail pieces), so memory is the file once plus the changed lines. Larger files, and
files over :data:`MAX_EDIT_FILE_BYTES` or :data:`MAX_EDIT_FILE_LINES` that are not such text,
are refused before anything is written."""

MAX_EDIT_REGION_CHARS = MAX_EDIT_FILE_BYTES
"""Most characters between the first and the last changed line that the diff of a large file
(over :data:`MAX_EDIT_FILE_BYTES`) may hold: edits far apart in a large file are refused."""

_VALIDATE_CHUNK = 1 << 20


def _too_large_error(path: str) -> ToolError:
    return ToolError(
        f"Could not edit file: {show_path(path)}. It is larger than edit handles "
        f"({format_size(MAX_EDIT_FILE_BYTES)} or {MAX_EDIT_FILE_LINES} lines; up to "
        f"{format_size(MAX_EDIT_LARGE_FILE_BYTES)} for UTF-8 text without CR line endings whose "
        "old texts match exactly); change it with bash (sed, a script) instead."
    )


def _binary_error(path: str, data: bytes) -> ToolError:
    kind = binary_kind(data)
    what = f"{format_size(len(data))}, {kind}" if kind else format_size(len(data))
    return ToolError(
        f"Could not edit file: {show_path(path)}. It is a binary file ({what}), not text; "
        "edit only changes text files."
    )


async def _read_file(operations: FileOperations, absolute: str, path: str) -> bytes:
    """The file's bytes; refused past :data:`MAX_EDIT_LARGE_FILE_BYTES` without holding more."""
    try:
        data = await operations.read_bytes(absolute, 0, MAX_EDIT_LARGE_FILE_BYTES + 1)
    except OSError as exc:
        raise _read_error(exc, absolute, path) from exc
    if len(data) > MAX_EDIT_LARGE_FILE_BYTES:
        raise _too_large_error(path)
    return data


async def _check_and_read(operations: FileOperations, absolute: str, path: str) -> bytes:
    """Check the file may be read and written and is a regular file, then read it (refused past
    :data:`MAX_EDIT_LARGE_FILE_BYTES` before it is read): in one worker-thread call when the
    backend has ``read_for_update``, else through ``access``, ``stat`` and ``read_bytes``."""
    mode = os.R_OK | os.W_OK
    combined = getattr(operations, "read_for_update", None)
    try:
        if callable(combined):
            found = await combined(absolute, mode, MAX_EDIT_LARGE_FILE_BYTES)
        else:
            found = None
        if found is None:
            info, data = await check_access(operations, absolute, mode), None
        else:
            info, data = found
            check_write_bits(info, absolute, mode)
    except Exception as exc:
        await trio.lowlevel.checkpoint_if_cancelled()
        raise _access_error(path, exc) from exc
    if info is not None and info.kind == "other":
        raise not_regular_file_error("edit", path)
    if info is not None and info.size > MAX_EDIT_LARGE_FILE_BYTES:
        raise _too_large_error(path)  # before reading it
    if isinstance(data, OSError):
        raise _read_error(data, absolute, path) from data
    if data is None:
        await trio.lowlevel.checkpoint_if_cancelled()
        data = await _read_file(operations, absolute, path)
    elif len(data) > MAX_EDIT_LARGE_FILE_BYTES:
        raise _too_large_error(path)
    return data


def _decodable_whole(data: bytes) -> bool:
    """Whether the decoded-text path may take ``data`` (:data:`MAX_EDIT_FILE_BYTES`); fewer
    bytes than :data:`MAX_EDIT_FILE_LINES` hold fewer newlines, uncounted."""
    size = len(data)
    return size <= MAX_EDIT_FILE_BYTES and (
        size < MAX_EDIT_FILE_LINES or data.count(b"\n") < MAX_EDIT_FILE_LINES
    )


def _utf8_without_cr(data: bytes) -> int | None:
    """The BOM length (0 or 3) when ``data`` is UTF-8 text without any ``\r`` (the bytes path),
    else ``None``. Binary content raises the binary error's ``ToolError`` only for files the
    decoded path cannot take (it words the same error for the others)."""
    if b"\r" in data:
        return None
    if _decodable_whole(data):
        encoding = detect_encoding(data)
        if encoding is None or not encoding.is_utf8:
            return None
    else:
        encoding = detect_encoding(data[:SNIFF_BYTES], complete=False)
        if encoding is None or not encoding.is_utf8 or not _valid_utf8_in_chunks(data):
            return None
    return len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0


def _valid_utf8_in_chunks(data: bytes) -> bool:
    """``data`` decodes as UTF-8, checked a MiB at a time (never the whole text at once)."""
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(data)
    try:
        for pos in range(0, len(data), _VALIDATE_CHUNK):
            decoder.decode(view[pos : pos + _VALIDATE_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True)
class _FileText:
    """A text file as edit sees it: ``text`` without BOM, the ``bom`` character (U+FEFF or
    ``""``) and the ``encoding`` that gives the original bytes back."""

    text: str
    bom: str
    encoding: TextEncoding

    def encode(self, text: str, path: str) -> bytes:
        try:
            return encode_text(self.bom + text, self.encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end][:3]
            shown = ", ".join(f"U+{ord(c):04X} {c!r}" for c in bad)
            raise ToolError(
                f"Could not edit file: {show_path(path)}. The file is encoded as {self.encoding.label}, "
                f"which cannot represent {shown} from the new text; nothing was written."
            ) from None


def _decode_text(data: bytes, path: str) -> _FileText:
    """Decode the file; refuse binary content and bytes that would not survive the round trip
    (never turn a file into U+FFFD: ``docs/explanation/differences.md``)."""
    if not _decodable_whole(data):
        raise _too_large_error(path)
    encoding = detect_encoding(data)
    if encoding is None:
        raise _binary_error(path, data)
    text = decode_text(data, encoding)
    if encode_text(text, encoding) != data:
        raise ToolError(
            f"Could not edit file: {show_path(path)}. It is not valid {encoding.label} text, so it cannot "
            "be edited without changing bytes it does not touch."
        )
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    return _FileText(text[len(bom) :], bom, encoding)


async def _read_text(operations: FileOperations, absolute: str, path: str) -> _FileText:
    """Read and decode the file (:func:`_decode_text`)."""
    try:
        data = await operations.read_bytes(absolute, 0, MAX_EDIT_FILE_BYTES + 1)
    except OSError as exc:
        raise _read_error(exc, absolute, path) from exc
    return _decode_text(data, path)


def _details_of(diff: LineDiff, path: str) -> dict[str, Any]:
    """``diff``, ``patch`` and ``firstChangedLine`` from the line diff of the LF views of the
    file before and after (no BOM, no CR), as Pi 1.6 builds them."""
    from pi_builtin_tools.edit_diff import format_diff_string, format_unified_patch

    shown = format_diff_string(diff)
    details: dict[str, Any] = {"diff": shown.diff, "patch": format_unified_patch(path, diff)}
    if shown.first_changed_line is not None:
        details["firstChangedLine"] = shown.first_changed_line
    return details


# --------------------------------------------------------------------------------------------
# Large files: exact matches on the bytes, written in pieces
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _BytesEdit:
    """An edit done on the file's bytes: ``pieces`` (views of the file and new texts) make the
    new file; ``details`` as :func:`_details_of` gives them."""

    pieces: list[bytes | memoryview]
    details: dict[str, Any]


def _encoded_pairs(edits: Sequence[dict[str, str]]) -> list[tuple[bytes, bytes]] | None:
    """``(oldText, newText)`` as UTF-8, both LF-normalised (in a file without CR every line
    break is written as ``\n``); ``None`` when a text cannot be UTF-8 (the decoded path words
    that case)."""
    from pi_builtin_tools.edit_diff import normalize_to_lf

    pairs: list[tuple[bytes, bytes]] = []
    for edit in edits:
        try:
            pairs.append(
                (
                    normalize_to_lf(edit["oldText"]).encode(),
                    normalize_to_lf(edit["newText"]).encode(),
                )
            )
        except UnicodeEncodeError:
            return None
    return pairs


class _NeedsDecodedText(Exception):
    """The bytes path cannot take this call: ``edits[index]`` does not match exactly, or
    (``index`` ``None``) a text cannot be matched as UTF-8 bytes."""

    def __init__(self, index: int | None) -> None:
        super().__init__(index)
        self.index = index


def _edit_bytes(data: bytes, bom: int, edits: Sequence[dict[str, str]], path: str) -> _BytesEdit:
    """:func:`~pi_builtin_tools.edit_diff.apply_edits` on UTF-8 ``data`` without CR (after a
    ``bom``-byte BOM), with the same errors in the same order, as long as every ``oldText``
    matches exactly; raises :class:`_NeedsDecodedText` when one does not (the fuzzy match needs
    the decoded text) or a text cannot take this path. UTF-8 is self-synchronising, so a byte match is a character
    match and byte counts are character counts of matches."""
    pairs = _encoded_pairs(edits)
    if pairs is None:
        raise _NeedsDecodedText(None)
    shown = show_path(path)
    total = len(pairs)
    from pi_builtin_tools.edit_diff import (
        DiffTooLarge,
        EditError,
        _duplicate_error,
        _empty_old_text_error,
        _no_change_error,
        count_occurrences,
        line_diff_of_region,
    )

    for i, (old, _) in enumerate(pairs):
        if not old:
            raise _empty_old_text_error(shown, i, total)
    found: list[tuple[int, int, int, bytes]] = []
    for i, (old, new) in enumerate(pairs):
        index = data.find(old, bom)
        if index == -1:
            raise _NeedsDecodedText(i)
        if data.find(old, index + 1) != -1:
            occurrences = count_occurrences(data, old, bom)
            raise _duplicate_error(shown, i, total, occurrences)
        found.append((index, index + len(old), i, new))
    found.sort(key=lambda f: f[0])  # stable: as apply_edits, ties keep call order
    for (_, prev_end, prev_i, _), (start, _, cur_i, _) in itertools.pairwise(found):
        if prev_end > start:
            raise EditError(
                f"edits[{prev_i}] and edits[{cur_i}] overlap in {shown}. "
                "Merge them into one edit or target disjoint regions."
            )
    first, last_end = found[0][0], found[-1][1]
    view = memoryview(data)
    pos = first
    middle: list[bytes | memoryview] = []
    for start, end, _, new in found:
        middle.append(view[pos:start])
        middle.append(new)
        pos = end
    changed = b"".join(middle)
    if len(changed) == last_end - first and changed == data[first:last_end]:
        raise _no_change_error(shown, total)
    prefix_end = max(bom, data.rfind(b"\n", bom, first) + 1)
    newline = data.find(b"\n", last_end)
    suffix_start = len(data) if newline == -1 else newline + 1
    if not _decodable_whole(data) and (
        suffix_start - prefix_end + len(changed) > MAX_EDIT_REGION_CHARS
    ):
        raise ToolError(
            f"Could not edit file: {shown}. Its edits span more than edit handles in a file this "
            f"large ({format_size(MAX_EDIT_REGION_CHARS)} from the first changed line to the last); "
            "make them in separate calls, or change it with bash (sed, a script) instead."
        )
    old_mid = data[prefix_end:suffix_start].decode()
    new_mid = (data[prefix_end:first] + changed + data[last_end:suffix_start]).decode()
    limit = None if _decodable_whole(data) else MAX_EDIT_REGION_CHARS
    try:
        display = line_diff_of_region(
            data,
            bom,
            prefix_end,
            old_mid,
            new_mid,
            suffix_start,
            len(data),
            max_chars=limit,
        )
    except DiffTooLarge:
        raise ToolError(
            f"Could not edit file: {shown}. The lines around its edits repeat too far for the "
            f"diff edit shows ({format_size(MAX_EDIT_REGION_CHARS)}) in a file this large; change "
            "it with bash (sed, a script) instead."
        ) from None
    pieces: list[bytes | memoryview] = [view[:first], changed, view[last_end:]]
    return _BytesEdit(pieces, _details_of(display, path))


def _not_found_in_large_file(path: str, index: int, total: int) -> ToolError:
    from pi_builtin_tools.edit_diff import EditError, not_found_header

    return EditError(
        not_found_header(show_path(path), index, total)[:-1]
        + f"; in a file over {format_size(MAX_EDIT_FILE_BYTES)} it is not looked up "
        "approximately and no closest match is shown."
    )


# --------------------------------------------------------------------------------------------
# The tool
# --------------------------------------------------------------------------------------------


def _apply(
    data: bytes, edits: Sequence[dict[str, str]], path: str
) -> tuple[list[bytes | memoryview], dict[str, Any]]:
    """The new file (as pieces to write) and the result's details: on the bytes when the file is
    UTF-8 without CR and every ``oldText`` matches exactly, else on the decoded text (files up to
    :data:`MAX_EDIT_FILE_BYTES`)."""
    from pi_builtin_tools.edit_diff import apply_edits, line_diff

    bom = _utf8_without_cr(data)
    if bom is not None:
        try:
            done = _edit_bytes(data, bom, edits, path)
        except _NeedsDecodedText as exc:
            if not _decodable_whole(data):
                if exc.index is None:
                    raise _too_large_error(path) from None
                raise _not_found_in_large_file(path, exc.index, len(edits)) from None
        else:
            return done.pieces, done.details
    if not _decodable_whole(data):
        if detect_encoding(data[:SNIFF_BYTES], complete=False) is None:
            raise _binary_error(path, data)
        raise _too_large_error(path)
    file = _decode_text(data, path)
    applied = apply_edits(file.text, edits, show_path(path))
    new_data = file.encode(applied.new_text, path)
    details = _details_of(line_diff(applied.base_content, applied.new_content), path)
    return [new_data], details


async def _write_pieces(
    operations: FileOperations, absolute: str, pieces: list[bytes | memoryview]
) -> None:
    """Replace the file with the concatenation of ``pieces`` through ``write_bytes``; a file
    over :data:`MAX_EDIT_FILE_BYTES` through the backend's ``write_chunks`` when it has one, so
    the pieces are never joined (the file is not held twice)."""
    size = sum(len(piece) for piece in pieces)
    write_chunks = getattr(operations, "write_chunks", None)
    if size > MAX_EDIT_FILE_BYTES and callable(write_chunks):
        await write_chunks(absolute, pieces)
    elif len(pieces) == 1 and isinstance(pieces[0], bytes):
        await operations.write_bytes(absolute, pieces[0])
    else:
        await operations.write_bytes(absolute, b"".join(pieces))


APPLY_IN_LOOP_BYTES = 64 * 1024
"""Files up to this size are edited (matched, diffed) on the event loop; larger ones in a worker
thread that an abort abandons, so a diff of thousands of rewritten lines never blocks Ctrl-C."""

_EDIT_GROUP = "pi_builtin_tools.edit"
"""Edits of one file queued one after another share one write (group commit): each sees the
previous one's content, and each returns once the last one's content is on disk."""


async def edit_file(
    operations: FileOperations, cwd: str, path: str, edits: Sequence[dict[str, str]]
) -> AgentToolResult:
    """Apply ``edits`` to the file ``path`` (relative to ``cwd``) as the tool does; raises
    :class:`~pi_core._errors.ToolError` with the model-facing text on failure. The caller must
    not checkpoint before calling it, so that queue order is call order."""
    check_no_surrogate(path)
    started = False

    async def run(absolute: str) -> AgentToolResult:
        nonlocal started
        started = True
        await trio.lowlevel.checkpoint_if_cancelled()
        staged: list[bytes | memoryview] | None = staged_file_content()
        if staged is None:
            data = await _check_and_read(operations, absolute, path)
        else:  # an earlier edit of this batch left it, checked, not yet written
            data = (
                staged[0] if len(staged) == 1 and isinstance(staged[0], bytes) else b"".join(staged)
            )
            if len(data) > MAX_EDIT_LARGE_FILE_BYTES:  # grown past the limit by this batch
                raise _too_large_error(path)
        await trio.lowlevel.checkpoint_if_cancelled()
        if len(data) <= APPLY_IN_LOOP_BYTES:
            pieces, details = _apply(data, edits, path)
        else:  # the diff of a large rewrite can take seconds: keep the loop (and abort) free
            pieces, details = await trio.to_thread.run_sync(
                _apply, data, edits, path, abandon_on_cancel=True
            )

        async def write(pieces: list[bytes | memoryview]) -> None:
            try:
                await _write_pieces(operations, absolute, pieces)
            except OSError as exc:
                if exc.errno == errno.EINVAL:  # replaced by a special file since the check
                    raise not_regular_file_error("edit", path) from exc
                raise ToolError(node_error_message(exc, "open", absolute)) from exc

        await trio.lowlevel.checkpoint_if_cancelled()
        stage_file_write(pieces, write)
        return AgentToolResult(
            content=[TextContent(text=f"Successfully replaced {len(edits)} block(s) in {path}.")],
            details=details,
        )

    try:
        return await with_tool_path_mutation_queue(
            path, cwd, operations, run, group=(_EDIT_GROUP, id(operations))
        )
    except Exception as exc:
        if started:
            raise
        raise _access_error(path, exc) from exc  # the backend failed while resolving the path


async def compute_edits_diff(
    path: str, edits: Sequence[dict[str, str]], cwd: str, operations: FileOperations
) -> dict[str, Any]:
    """A preview of ``edits`` without writing:
    ``{"diff", "firstChangedLine"}``, or ``{"error": text}`` for any failure (an unreadable
    file: ``Could not edit file: {path}. Error code: {code}.``)."""
    from pi_builtin_tools.edit_diff import apply_edits, format_diff_string, line_diff

    try:
        try:
            absolute = await resolve_existing_path(path, cwd, operations, for_read=False)
            await check_access(operations, absolute, os.R_OK)
        except Exception as exc:
            raise _access_error(path, exc) from exc
        file = await _read_text(operations, absolute, path)
        applied = apply_edits(file.text, edits, show_path(path))
    except Exception as exc:
        return {"error": str(exc)}
    display = format_diff_string(line_diff(applied.base_content, applied.new_content))
    preview: dict[str, Any] = {"diff": display.diff}
    if display.first_changed_line is not None:
        preview["firstChangedLine"] = display.first_changed_line
    return preview


def _render_call(args: Any) -> str:
    path = args.get("path") if isinstance(args, dict) else None
    return f"edit {path if isinstance(path, str) else '...'}"


def _render_result(result: AgentToolResult) -> str:
    """The result text, then the diff (its ``+``/``-`` lines are coloured in ``pi run``)."""
    details = result.details if isinstance(result.details, dict) else {}
    diff = details.get("diff")
    text = result.text.strip("\n")
    return f"{text}\n{diff}" if isinstance(diff, str) and not result.is_error else result.text


def create_edit_tool_definition(cwd: str, operations: FileOperations) -> ToolDefinition:
    """The ``edit`` tool for a session in ``cwd``, doing its I/O through ``operations``
    (``docs/reference/tools.md``). See the module docstring for what a call does."""

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
    ) -> AgentToolResult:
        path, edits = validate_edit_input(params)
        return await edit_file(operations, cwd, path, edits)

    return ToolDefinition(
        name="edit",
        label="edit",
        description=EDIT_DESCRIPTION,
        parameters=EDIT_PARAMETERS,
        execute=execute,
        prepare_arguments=prepare_edit_arguments,
        prompt_snippet=EDIT_PROMPT_SNIPPET,
        prompt_guidelines=list(EDIT_PROMPT_GUIDELINES),
        render_call=_render_call,
        render_result=_render_result,
        verify="outcome",
        path_arguments=(PathArgument("path", read=True, write=True),),
        replay="never",
        mutates="paths",
        constrained_sampling={"type": "json_schema", "strict": "prefer"},
    )


__all__ = [
    "EDIT_DESCRIPTION",
    "EDIT_PARAMETERS",
    "EDIT_PROMPT_GUIDELINES",
    "EDIT_PROMPT_SNIPPET",
    "MAX_EDIT_FILE_BYTES",
    "MAX_EDIT_FILE_LINES",
    "MAX_EDIT_LARGE_FILE_BYTES",
    "EditError",
    "compute_edits_diff",
    "create_edit_tool_definition",
    "edit_file",
    "prepare_edit_arguments",
    "validate_edit_input",
]
