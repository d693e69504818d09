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
   socket).``: a FIFO is never opened, so the call cannot block);
3. read its bytes (at most :data:`MAX_EDIT_FILE_BYTES`, 8 MiB, and
   :data:`MAX_EDIT_FILE_LINES`, 400,000 lines: a larger file is refused with ``Could not edit
   file: {path}. It is larger than edit handles (8.0MB or 400000 lines); change it with bash
   (sed, a script) instead.``) and classify them (:mod:`pi_builtin_tools.file_encoding`): binary files are
   refused with their size and kind; UTF-8 (with or without BOM), UTF-16/32 with BOM and
   Windows-1252/Latin-1 are decoded, and refused unless they encode back to the same bytes;
4. apply the edits to the decoded text (line endings, BOM and every untouched byte kept);
5. encode back in the file's encoding (refused with a clear error if the new text has a
   character the encoding cannot hold) and replace the file atomically through
   ``operations.write_bytes``. The write is shielded: on abort it finishes, then the call reports
   ``Operation aborted``;
6. return ``Successfully replaced N block(s) in {path}.`` with ``details``
   ``{diff, patch, firstChangedLine}``.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import trio

from pi_builtin_tools.edit_diff import (
    EditError,
    apply_edits,
    generate_diff_string,
    generate_unified_patch,
)
from pi_builtin_tools.file_access import check_access
from pi_builtin_tools.file_encoding import (
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
)
from pi_core.backends import resolve_existing_path, run_shielded, with_tool_path_mutation_queue

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
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value, strict=False)
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
"""Largest file edit changes (8 MiB): edit holds the file, its text, the new text and the diff
at once (about six times the file's size, plus ~200 bytes a line), so a larger one is refused
before it is read whole and memory stays bounded."""

MAX_EDIT_FILE_LINES = 400_000
"""Most lines (newlines) of a file edit changes; see :data:`MAX_EDIT_FILE_BYTES`."""


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


async def _read_text(operations: FileOperations, absolute: str, path: str) -> _FileText:
    """Read and decode the file; refuse binary content and bytes that would not survive the
    round trip (never turn a file into U+FFFD: ``docs/explanation/differences.md``)."""
    try:
        data = await operations.read_bytes(absolute, 0, MAX_EDIT_FILE_BYTES + 1)
    except OSError as exc:
        raise _read_error(exc, absolute, path) from exc
    if len(data) > MAX_EDIT_FILE_BYTES or data.count(b"\n") >= MAX_EDIT_FILE_LINES:
        raise ToolError(
            f"Could not edit file: {show_path(path)}. It is larger than edit handles "
            f"({format_size(MAX_EDIT_FILE_BYTES)} or {MAX_EDIT_FILE_LINES} lines); change it "
            "with bash (sed, a script) instead."
        )
    encoding = detect_encoding(data)
    if encoding is None:
        kind = binary_kind(data)
        what = f"{format_size(len(data))}, {kind}" if kind else format_size(len(data))
        raise ToolError(
            f"Could not edit file: {show_path(path)}. It is a binary file ({what}), not text; "
            "edit only changes text files."
        )
    text = decode_text(data, encoding)
    if encode_text(text, encoding) != data:
        raise ToolError(
            f"Could not edit file: {show_path(path)}. It is not valid {encoding.label} text, so it cannot "
            "be edited without changing bytes it does not touch."
        )
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    return _FileText(text[len(bom) :], bom, encoding)


def _patch_text(file: _FileText, text: str) -> str:
    """The text a unified patch is made of: with the BOM character when the file has one, so the
    patch applies to the file as it is on disk."""
    return file.bom + text


def _details(path: str, file: _FileText, base: str, new: str, new_text: str) -> dict[str, Any]:
    display = generate_diff_string(base, new)
    details: dict[str, Any] = {
        "diff": display.diff,
        "patch": generate_unified_patch(
            path, _patch_text(file, file.text), _patch_text(file, new_text)
        ),
    }
    if display.first_changed_line is not None:
        details["firstChangedLine"] = display.first_changed_line
    return details


# --------------------------------------------------------------------------------------------
# The tool
# --------------------------------------------------------------------------------------------


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
        try:
            info = await check_access(operations, absolute, os.R_OK | os.W_OK)
        except Exception as exc:
            await trio.lowlevel.checkpoint_if_cancelled()
            raise _access_error(path, exc) from exc
        if info is not None and info.kind == "other":
            raise not_regular_file_error("edit", path)
        await trio.lowlevel.checkpoint_if_cancelled()
        file = await _read_text(operations, absolute, path)
        await trio.lowlevel.checkpoint_if_cancelled()
        applied = apply_edits(file.text, edits, show_path(path))
        data = file.encode(applied.new_text, path)
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            await run_shielded(operations.write_bytes, absolute, data)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # replaced by a special file since the check
                raise not_regular_file_error("edit", path) from exc
            raise ToolError(node_error_message(exc, "open", absolute)) from exc
        return AgentToolResult(
            content=[TextContent(text=f"Successfully replaced {len(edits)} block(s) in {path}.")],
            details=_details(
                path, file, applied.base_content, applied.new_content, applied.new_text
            ),
        )

    try:
        return await with_tool_path_mutation_queue(path, cwd, operations, run)
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
    display = generate_diff_string(applied.base_content, applied.new_content)
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
        constrained_sampling={"type": "json_schema", "strict": "prefer"},
    )


__all__ = [
    "EDIT_DESCRIPTION",
    "EDIT_PARAMETERS",
    "EDIT_PROMPT_GUIDELINES",
    "EDIT_PROMPT_SNIPPET",
    "MAX_EDIT_FILE_BYTES",
    "MAX_EDIT_FILE_LINES",
    "EditError",
    "compute_edits_diff",
    "create_edit_tool_definition",
    "edit_file",
    "prepare_edit_arguments",
    "validate_edit_input",
]
