"""The read tool through its ``execute``: spec §7.1, scenarios §8.4–§8.5 (61–80), the read
conformance cases (exact texts and details), cases c05/c15/c25/c29, encodings, images and
streaming."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from pi_builtin_tools.files.image_processing import ImageResizeOptions, detect_image_mime
from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import (
    READ_DESCRIPTION,
    READ_PARAMETERS,
    ReadToolOptions,
    create_read_tool_definition,
    read_file,
)
from pi_builtin_tools.files.truncate import format_size, truncate_head
from pi_core._errors import ToolError
from pi_core._tools.definition import wrap_tool_definition
from pi_core._wire.messages import AgentToolResult

OPS = LocalFileOperations()
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def read(cwd: Path, options: ReadToolOptions | None = None, **args: Any) -> AgentToolResult:
    definition = create_read_tool_definition(str(cwd), OPS, options=options)
    return await definition.execute("call-1", args, None, None)


async def read_error(cwd: Path, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        await read(cwd, **args)
    return str(info.value)


def wire(result: AgentToolResult) -> dict[str, Any]:
    """The model-facing JSON of a successful read, after checking its ``structuredContent``
    (Pi 1.6.0: the first text block's text, or the image with that text as ``note``)."""
    data = result.to_json_dict()
    structured = data.pop("structuredContent")
    blocks = data["content"]
    images = [b for b in blocks if b["type"] == "image"]
    note = next(b["text"] for b in blocks if b["type"] == "text")
    if images:
        assert structured == {
            "type": "image",
            "data": images[0]["data"],
            "mimeType": images[0]["mimeType"],
            "note": note,
        }
    else:
        assert structured == note
    return data


async def test_structured_content_and_output_schema(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("l1\nl2\nl3\n")
    result = await read(tmp_path, path="a.txt", limit=1)
    assert result.structured_content == "l1\n\n[3 more lines in file. Use offset=2 to continue.]"
    definition = create_read_tool_definition(str(tmp_path), OPS)
    assert definition.replay == "safe"
    assert definition.output_schema == {
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


# -- definition ---------------------------------------------------------------------------


def test_definition_matches_pi() -> None:
    definition = create_read_tool_definition("/w", OPS)
    assert (definition.name, definition.label) == ("read", "read")
    assert definition.description == (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). "
        "Images are sent as attachments. For text files, output is truncated to 2000 lines or "
        "50KB (whichever is hit first). Use offset/limit for large files. When you need the full "
        "file, continue with offset until complete."
    )
    assert definition.description == READ_DESCRIPTION
    assert definition.parameters == {
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
    assert definition.parameters is READ_PARAMETERS
    assert definition.prompt_snippet == "Read file contents"
    assert definition.prompt_guidelines == ["Use read to examine files instead of cat or sed."]
    assert definition.render_call is not None
    assert definition.render_call({"path": "a.py", "offset": 5, "limit": 10}) == "read a.py:5-14"


async def test_wrapped_agent_tool_runs(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A\n")
    agent_tool = wrap_tool_definition(create_read_tool_definition(str(tmp_path), OPS))
    result = await agent_tool.execute("c1", {"path": "a.txt"}, None)
    assert wire(result) == {"content": [{"type": "text", "text": "A\n"}]}


# -- text: conformance cases and scenarios 66-80 -----------------------------------------------


async def test_small_file_verbatim_no_details(tmp_path: Path) -> None:
    """Scenario 66 / read-small-file: exact content, no notice, no ``details`` key."""
    (tmp_path / "hello.txt").write_text("Hello, world!\nLine 2\nLine 3")
    (tmp_path / "crlf.txt").write_bytes("\ufeffa\r\nb\r\n".encode())
    assert wire(await read(tmp_path, path="hello.txt")) == {
        "content": [{"type": "text", "text": "Hello, world!\nLine 2\nLine 3"}]
    }
    assert wire(await read(tmp_path, path="crlf.txt")) == {
        "content": [{"type": "text", "text": "\ufeffa\r\nb\r\n"}]
    }


async def test_missing_file_enoent(tmp_path: Path) -> None:
    """Scenario 67 / read-missing-file."""
    assert await read_error(tmp_path, path="missing.txt") == (
        f"ENOENT: no such file or directory, access '{tmp_path}/missing.txt'"
    )


async def test_truncated_by_lines(tmp_path: Path) -> None:
    """Scenarios 68 and 74 / read-truncate-lines."""
    (tmp_path / "big.txt").write_text("\n".join(f"Line {i}" for i in range(1, 2501)))
    result = await read(tmp_path, path="big.txt")
    shown = "\n".join(f"Line {i}" for i in range(1, 2001))
    assert result.text == shown + "\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
    assert result.details == {
        "truncation": {
            "content": shown,
            "truncated": True,
            "truncatedBy": "lines",
            "totalLines": 2500,
            "totalBytes": 23892,
            "outputLines": 2000,
            "outputBytes": 18892,
            "lastLinePartial": False,
            "firstLineExceedsLimit": False,
            "maxLines": 2000,
            "maxBytes": 51200,
        }
    }


async def test_truncated_by_bytes(tmp_path: Path) -> None:
    """Scenario 69 / read-truncate-bytes: 500 lines of 208 bytes → 1-243 (50.0KB limit)."""
    lines = [f"Line {i}: " + "x" * 200 for i in range(1, 501)]
    (tmp_path / "wide.txt").write_text("\n".join(lines))
    result = await read(tmp_path, path="wide.txt")
    shown = "\n".join(lines[:243])
    assert result.text == (
        shown + "\n\n[Showing lines 1-243 of 500 (50.0KB limit). Use offset=244 to continue.]"
    )
    assert result.details["truncation"] == {
        "content": shown,
        "truncated": True,
        "truncatedBy": "bytes",
        "totalLines": 500,
        "totalBytes": 105391,
        "outputLines": 243,
        "outputBytes": 51164,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 2000,
        "maxBytes": 51200,
    }


async def test_exactly_2000_lines_with_final_newline_is_whole(tmp_path: Path) -> None:
    """read-2000-lines-trailing-newline (override, decision 5): whole file, no notice."""
    text = "".join(f"Line {i}\n" for i in range(1, 2001))
    (tmp_path / "exact.txt").write_text(text)
    assert wire(await read(tmp_path, path="exact.txt")) == {
        "content": [{"type": "text", "text": text}]
    }


async def test_offset_and_limit(tmp_path: Path) -> None:
    """Scenarios 70-72 / read-offset-limit."""
    (tmp_path / "hundred.txt").write_text("\n".join(f"Line {i}" for i in range(1, 101)))
    only_offset = await read(tmp_path, path="hundred.txt", offset=51)
    assert wire(only_offset) == {
        "content": [{"type": "text", "text": "\n".join(f"Line {i}" for i in range(51, 101))}]
    }
    only_limit = await read(tmp_path, path="hundred.txt", limit=10)
    assert only_limit.text == (
        "\n".join(f"Line {i}" for i in range(1, 11))
        + "\n\n[90 more lines in file. Use offset=11 to continue.]"
    )
    assert "details" not in wire(only_limit)
    both = await read(tmp_path, path="hundred.txt", offset=41, limit=20)
    assert both.text == (
        "\n".join(f"Line {i}" for i in range(41, 61))
        + "\n\n[40 more lines in file. Use offset=61 to continue.]"
    )


async def test_offset_beyond_end(tmp_path: Path) -> None:
    """Scenario 73."""
    (tmp_path / "three.txt").write_text("a\nb\nc")
    assert await read_error(tmp_path, path="three.txt", offset=100) == (
        "Offset 100 is beyond end of file (3 lines total)"
    )


async def test_offset_boundaries_trailing_newline_and_empty(tmp_path: Path) -> None:
    """Scenario 80 / read-offset-boundaries: the final newline counts as a line for offsets."""
    (tmp_path / "three.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "empty.txt").write_text("")
    assert wire(await read(tmp_path, path="three.txt", offset=4)) == {
        "content": [{"type": "text", "text": ""}]
    }
    assert await read_error(tmp_path, path="three.txt", offset=5) == (
        "Offset 5 is beyond end of file (4 lines total)"
    )
    assert wire(await read(tmp_path, path="empty.txt")) == {
        "content": [{"type": "text", "text": ""}]
    }
    assert wire(await read(tmp_path, path="empty.txt", offset=1)) == {
        "content": [{"type": "text", "text": ""}]
    }
    assert await read_error(tmp_path, path="empty.txt", offset=2) == (
        "Offset 2 is beyond end of file (1 lines total)"
    )


async def test_offset_zero_is_line_one(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb")
    assert (await read(tmp_path, path="f.txt", offset=0)).text == "a\nb"
    assert (await read(tmp_path, path="f.txt", offset=1.0)).text == "a\nb"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"offset": -3}, "offset must be a non-negative integer, got -3"),
        ({"offset": 1.5}, "offset must be a non-negative integer, got 1.5"),
        ({"offset": math.inf}, "offset must be a non-negative integer, got Infinity"),
        ({"limit": -1}, "limit must be a non-negative integer, got -1"),
        ({"limit": 1.5}, "limit must be a non-negative integer, got 1.5"),
        ({"limit": math.inf}, "limit must be a non-negative integer, got Infinity"),
        ({"limit": math.nan}, "limit must be a non-negative integer, got NaN"),
    ],
)
async def test_nonsense_offset_or_limit_is_an_error(
    tmp_path: Path, args: dict[str, float], message: str
) -> None:
    """The reference answers ``limit: -1`` with "[5 more lines ... Use offset=0]": refused."""
    (tmp_path / "four.txt").write_text("1\n2\n3\n4")
    assert await read_error(tmp_path, path="four.txt", **args) == message


async def test_limit_zero_selects_no_line(tmp_path: Path) -> None:
    """Pi 1.6 streams integer limits from 0 (``limit: ""`` and ``false`` coerce to 0)."""
    (tmp_path / "five.txt").write_text("l1\nl2\nl3\nl4\nl5\n")
    assert (await read(tmp_path, path="five.txt", limit=0)).text == (
        "\n\n[6 more lines in file. Use offset=1 to continue.]"
    )


async def test_limit_reaching_end_has_no_notice(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc")
    assert wire(await read(tmp_path, path="f.txt", offset=2, limit=5)) == {
        "content": [{"type": "text", "text": "b\nc"}]
    }


async def test_numeric_offset_from_coerced_string(tmp_path: Path) -> None:
    """Case c15 step 1 (the loop turns "50"/"3" into numbers; JS line count: 49 more)."""
    (tmp_path / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await read(tmp_path, path="lines.txt", offset=50, limit=3)
    assert result.text == (
        "line 50\nline 51\nline 52\n\n[49 more lines in file. Use offset=53 to continue.]"
    )


async def test_float_offset_printed_as_js(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb")
    assert await read_error(tmp_path, path="f.txt", offset=7.0) == (
        "Offset 7 is beyond end of file (2 lines total)"
    )


async def test_first_line_too_long(tmp_path: Path) -> None:
    """Scenario 78 / read-first-line-too-long."""
    (tmp_path / "longline.txt").write_text("a" * 60000 + "\nsecond line")
    result = await read(tmp_path, path="longline.txt")
    assert wire(result) == {
        "content": [
            {
                "type": "text",
                "text": "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' "
                "longline.txt | head -c 51200]",
            }
        ],
        "details": {
            "truncation": {
                "content": "",
                "truncated": True,
                "truncatedBy": "bytes",
                "totalLines": 2,
                "totalBytes": 60012,
                "outputLines": 0,
                "outputBytes": 0,
                "lastLinePartial": False,
                "firstLineExceedsLimit": True,
                "maxLines": 2000,
                "maxBytes": 51200,
            }
        },
    }


async def test_long_line_at_offset_names_that_line(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("short\n" + "é" * 30000 + "\nend")
    result = await read(tmp_path, path="./f.txt", offset=2)
    assert result.text == (
        "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' ./f.txt | head -c 51200]"
    )


async def test_crlf_bom_kept(tmp_path: Path) -> None:
    """Scenario 79: CRLF verbatim, BOM kept."""
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    assert (await read(tmp_path, path="w.txt")).text == "\ufeffa\r\nb\r\n"


# -- paths (§8.4) ---------------------------------------------------------------------------


async def test_path_at_and_nbsp(tmp_path: Path) -> None:
    """Scenarios 61-62 / read-path-at-and-nbsp."""
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    (tmp_path / "nb space.txt").write_text("nbsp resolved\n")
    assert (await read(tmp_path, path="@notes.txt")).text == "remember the milk\n"
    assert (await read(tmp_path, path="nb\u00a0space.txt")).text == "nbsp resolved\n"


async def test_home_path_error_names_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario 63."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert await read_error(tmp_path, path="~/x") == (
        f"ENOENT: no such file or directory, access '{tmp_path}/home/x'"
    )


async def test_path_fallbacks(tmp_path: Path) -> None:
    """Scenarios 64-65 / read-path-fallbacks; case c29 both steps."""
    (tmp_path / "Screenshot 2024-01-01 at 10.00.00\u202fAM.png").write_text(
        "screenshot placeholder\n"
    )
    (tmp_path / unicodedata.normalize("NFD", "Capture d\u2019écran.txt")).write_text("capture\n")
    (tmp_path / "Screenshot at 3.00.00\u202fp.m..txt").write_text("localized\n")
    assert (await read(tmp_path, path="Screenshot 2024-01-01 at 10.00.00 AM.png")).text == (
        "screenshot placeholder\n"
    )
    assert (await read(tmp_path, path="Capture d'écran.txt")).text == "capture\n"
    assert (await read(tmp_path, path="Screenshot at 3.00.00\u202fp.m..txt")).text == "localized\n"


async def test_directory_is_eisdir_read(tmp_path: Path) -> None:
    assert await read_error(tmp_path, path=".") == "EISDIR: illegal operation on a directory, read"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
async def test_unreadable_is_eacces(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    secret.chmod(0)
    assert await read_error(tmp_path, path="secret.txt") == (
        f"EACCES: permission denied, access '{secret}'"
    )


# -- encodings and binary files (decision 7) --------------------------------------------------


async def test_utf16_bom_decoded(tmp_path: Path) -> None:
    """Case c05 step 1: decoded text without the BOM, never NULs; the file is unchanged."""
    raw = b"\xff\xfeh\x00e\x00l\x00l\x00o\x00\r\x00\n\x00w\x00\xf6\x00r\x00l\x00d\x00\r\x00\n\x00"
    (tmp_path / "notes.txt").write_bytes(raw)
    assert wire(await read(tmp_path, path="notes.txt")) == {
        "content": [{"type": "text", "text": "hello\r\nwörld\r\n"}]
    }
    assert (tmp_path / "notes.txt").read_bytes() == raw
    (tmp_path / "be.txt").write_bytes("\ufeffhi\n".encode("utf-16-be"))
    assert (await read(tmp_path, path="be.txt")).text == "hi\n"
    (tmp_path / "u32.txt").write_bytes("\ufeffhi\n".encode("utf-32-le"))
    assert (await read(tmp_path, path="u32.txt")).text == "hi\n"
    (tmp_path / "bom-only.txt").write_bytes(b"\xff\xfe")
    assert (await read(tmp_path, path="bom-only.txt")).text == ""


async def test_utf16_bom_stripped_when_streaming(tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_bytes("\ufeffa\nb\n".encode("utf-16-le"))
    options = ReadToolOptions(whole_file_limit=0, chunk_size=3)  # FF FE 61 | 00 0A 00 | ...
    assert (await read(tmp_path, options, path="u16.txt", offset=2)).text == "b\n"
    assert (await read(tmp_path, options, path="u16.txt")).text == "a\nb\n"


async def test_binary_starting_with_utf16_bom_refused(tmp_path: Path) -> None:
    # FF FE then NULs and control bytes: not UTF-16 text
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00\x00\x01\x02\x03\x04" + bytes(range(256)) * 4)
    assert await read_error(tmp_path, path="blob.bin") == (
        "Cannot read blob.bin: binary file (1.0KB, 1032 bytes). read returns text files and "
        "images (jpg, png, gif, webp, bmp); use bash with a tool that understands this format "
        "to inspect it."
    )
    (tmp_path / "blob2.bin").write_bytes(b"\xff\xfe" + b"\x07\x00\x01\x00" * 100)
    assert (await read_error(tmp_path, path="blob2.bin")).startswith(
        "Cannot read blob2.bin: binary file (402B, 402 bytes)."
    )


async def test_legacy_single_byte_decoded_with_notice(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 \x93quoted\x94\n")
    assert (await read(tmp_path, path="latin.txt")).text == (
        "café “quoted”\n\n\n[Decoded as Windows-1252: the file is not valid UTF-8.]"
    )
    (tmp_path / "iso.txt").write_bytes(b"x\x81y\n")
    assert (await read(tmp_path, path="iso.txt")).text == (
        "x\x81y\n\n\n[Decoded as Latin-1 (ISO-8859-1): the file is not valid UTF-8.]"
    )


async def test_binary_file_refused(tmp_path: Path) -> None:
    """Case c25: short error, says binary, gives the size, no NUL/U+FFFD/raw bytes."""
    (tmp_path / "sheet.ods").write_bytes(
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 8
    )
    message = await read_error(tmp_path, path="sheet.ods")
    assert message == (
        "Cannot read sheet.ods: binary file (ZIP archive (also docx/xlsx/odt/jar), 2.0KB, 2058 "
        "bytes). read returns text files and images (jpg, png, gif, webp, bmp); use bash with a "
        "tool that understands this format to inspect it."
    )
    assert len(message.encode()) < 500
    (tmp_path / "blob").write_bytes(b"\x01\x02\x00\x03" * 10)
    assert (await read_error(tmp_path, path="blob")).startswith(
        "Cannot read blob: binary file (40B"
    )


# -- images (§7.1 step 3-4) -----------------------------------------------------------------


def _image_bytes(fmt: str, size: tuple[int, int], mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 30, 30) if mode == "RGB" else None).save(buffer, format=fmt)
    return buffer.getvalue()


def test_mime_from_magic_bytes() -> None:
    assert detect_image_mime(PNG_1X1) == "image/png"
    assert detect_image_mime(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert detect_image_mime(b"GIF89a....") == "image/gif"
    assert detect_image_mime(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert detect_image_mime(_image_bytes("BMP", (2, 2))) == "image/bmp"
    assert detect_image_mime(b"BMW cars are fast and this is text, not a bitmap\n") is None
    assert detect_image_mime(b"") is None


def test_sniffing_as_pi_16() -> None:
    """r16-read-image-sniffing: JPEG-LS, an animated PNG, a PNG without IHDR, GIF other than
    87a/89a and a 'BM' file without a bitmap header are not images."""
    assert detect_image_mime(b"\xff\xd8\xff\xf7abc\n") is None
    animated = PNG_1X1[:33] + b"\x00\x00\x00\x08acTL" + b"\x00" * 12 + PNG_1X1[33:]
    assert detect_image_mime(animated) is None
    assert detect_image_mime(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10) is None
    assert detect_image_mime(b"GIF88a....") is None
    assert detect_image_mime(b"BM not a bitmap\n") is None
    bmp = _image_bytes("BMP", (2, 2))
    assert detect_image_mime(bmp[:25]) is None  # shorter than the 26-byte header
    assert detect_image_mime(bmp[:30]) == "image/bmp"  # the header alone is enough
    two_planes = bmp[:26] + b"\x02\x00" + bmp[28:]
    assert detect_image_mime(two_planes) is None


async def test_png_named_txt_is_image_and_text_named_png_is_text(tmp_path: Path) -> None:
    """Scenarios 75 and 77 / read-image-magic-bytes: passed through unchanged."""
    (tmp_path / "image.txt").write_bytes(PNG_1X1)
    (tmp_path / "not-an-image.png").write_text("just some text\n")
    assert wire(await read(tmp_path, path="image.txt")) == {
        "content": [
            {"type": "text", "text": "Read image file [image/png]"},
            {"type": "image", "data": base64.b64encode(PNG_1X1).decode(), "mimeType": "image/png"},
        ]
    }
    assert wire(await read(tmp_path, path="not-an-image.png")) == {
        "content": [{"type": "text", "text": "just some text\n"}]
    }


async def test_bmp_converted_to_png(tmp_path: Path) -> None:
    """Scenario 76."""
    (tmp_path / "pic.bmp").write_bytes(_image_bytes("BMP", (3, 2)))
    result = await read(tmp_path, path="pic.bmp")
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    )
    image = result.content[1]
    assert image.mime_type == "image/png"  # type: ignore[union-attr]
    data = base64.b64decode(image.data)  # type: ignore[union-attr]
    assert data[0] == 0x89
    assert Image.open(io.BytesIO(data)).size == (3, 2)


async def test_large_image_resized_with_note(tmp_path: Path) -> None:
    (tmp_path / "wide.png").write_bytes(_image_bytes("PNG", (3000, 1000)))
    result = await read(tmp_path, path="wide.png")
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Read image file [image/png]\n[Image: original 3000x1000, displayed at 2000x667. "
        "Multiply coordinates by 1.50 to map to original image.]"
    )
    shown = Image.open(io.BytesIO(base64.b64decode(result.content[1].data)))  # type: ignore[union-attr]
    assert shown.size == (2000, 667)


async def test_configured_limits_and_no_resize(tmp_path: Path) -> None:
    (tmp_path / "p.png").write_bytes(_image_bytes("PNG", (300, 300)))
    small = ReadToolOptions(image_resize=ImageResizeOptions(max_width=100, max_height=100))
    result = await read(tmp_path, small, path="p.png")
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Read image file [image/png]\n[Image: original 300x300, displayed at 100x100. "
        "Multiply coordinates by 3.00 to map to original image.]"
    )
    raw = await read(tmp_path, ReadToolOptions(auto_resize_images=False), path="p.png")
    assert raw.content[1].data == base64.b64encode((tmp_path / "p.png").read_bytes()).decode()  # type: ignore[union-attr]


async def test_payload_limit_forces_jpeg(tmp_path: Path) -> None:
    noisy = Image.frombytes("RGB", (200, 200), os.urandom(200 * 200 * 3))
    buffer = io.BytesIO()
    noisy.save(buffer, format="PNG")
    (tmp_path / "noise.png").write_bytes(buffer.getvalue())
    options = ReadToolOptions(image_resize=ImageResizeOptions(max_bytes=40_000))
    result = await read(tmp_path, options, path="noise.png")
    assert result.content[1].mime_type == "image/jpeg"  # type: ignore[union-attr]
    assert len(result.content[1].data) < 40_000  # type: ignore[union-attr]
    assert result.text.startswith("Read image file [image/jpeg]\n[Image: original 200x200")


async def test_undecodable_image_omitted(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(PNG_1X1[:33] + b"garbage" * 10)
    (tmp_path / "cut.png").write_bytes(PNG_1X1[: len(PNG_1X1) // 2])
    expected = {
        "content": [
            {
                "type": "text",
                "text": "Read image file [image/png]\n[Image omitted: the file could not be "
                "decoded as an image (corrupt or truncated).]",
            }
        ]
    }
    assert wire(await read(tmp_path, path="broken.png")) == expected
    assert wire(await read(tmp_path, path="cut.png")) == expected


async def test_image_that_cannot_fit_is_omitted(tmp_path: Path) -> None:
    (tmp_path / "i.png").write_bytes(PNG_1X1)
    options = ReadToolOptions(image_resize=ImageResizeOptions(max_width=1, max_bytes=1))
    assert wire(await read(tmp_path, options, path="i.png")) == {
        "content": [
            {
                "type": "text",
                "text": "Read image file [image/png]\n[Image omitted: could not be resized below "
                "the inline image size limit.]",
            }
        ]
    }


async def test_model_without_images_gets_note_instead(tmp_path: Path) -> None:
    (tmp_path / "i.png").write_bytes(PNG_1X1)
    result = await read(tmp_path, ReadToolOptions(supports_images=False), path="i.png")
    assert wire(result) == {
        "content": [
            {
                "type": "text",
                "text": "Read image file [image/png]\n[Current model does not support images. "
                "The image will be omitted from this request.]",
            }
        ]
    }
    definition = create_read_tool_definition(str(tmp_path), OPS)
    ctx = {"model": {"input": ["text"]}}
    via_ctx = await definition.execute("c", {"path": "i.png"}, None, ctx)
    assert len(via_ctx.content) == 1
    vision = await definition.execute(
        "c", {"path": "i.png"}, None, {"model": {"input": ["text", "image"]}}
    )
    assert len(vision.content) == 2


def test_options_from_config() -> None:
    options = ReadToolOptions.from_config(
        {"tools": {"read": {"max_image_width": 800, "supports_images": False}}}
    )
    assert options.image_resize.max_width == 800
    assert options.image_resize.max_height == 2000
    assert options.supports_images is False
    assert ReadToolOptions.from_config({}) == ReadToolOptions()


# -- streaming ------------------------------------------------------------------------------


def _reference(
    text: str, raw_path: str, offset: float | None, limit: float | None
) -> tuple[str, Any]:
    """Spec §7.1 on the whole string (what streaming must reproduce)."""
    all_lines = text.split("\n")
    start = max(0, offset - 1) if offset else 0
    if start >= len(all_lines):
        raise ToolError(f"Offset {offset} is beyond end of file ({len(all_lines)} lines total)")
    user_limited = None
    if limit is not None:
        end = min(start + limit, len(all_lines))
        selected = "\n".join(all_lines[int(start) : int(end)])
        user_limited = end - start
    else:
        selected = "\n".join(all_lines[int(start) :])
    t = truncate_head(selected)
    display = start + 1
    if t.first_line_exceeds_limit:
        size = format_size(len(all_lines[int(start)].encode()))
        return (
            f"[Line {display} is {size}, exceeds 50.0KB limit. Use bash: sed -n '{display}p' {raw_path} | head -c 51200]",
            {"truncation": t.to_details()},
        )
    if t.truncated:
        end_display = display + t.output_lines - 1
        extra = "" if t.truncated_by == "lines" else " (50.0KB limit)"
        return (
            f"{t.content}\n\n[Showing lines {display}-{end_display} of {len(all_lines)}{extra}. Use offset={end_display + 1} to continue.]",
            {"truncation": t.to_details()},
        )
    if user_limited is not None and start + user_limited < len(all_lines):
        remaining = len(all_lines) - (start + user_limited)
        return (
            f"{t.content}\n\n[{remaining} more lines in file. Use offset={start + user_limited + 1} to continue.]",
            None,
        )
    return t.content, None


_line = st.one_of(
    st.text(alphabet="ab é€😀\r\t", max_size=12),
    st.integers(min_value=0, max_value=60000).map(lambda n: "x" * n),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_line, max_size=40),
    many=st.integers(min_value=0, max_value=2600),
    trailing=st.booleans(),
    offset=st.one_of(st.none(), st.integers(min_value=0, max_value=2700)),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=2700)),
    chunk=st.integers(min_value=1, max_value=70000),
)
def test_streaming_equals_whole_file_semantics(
    lines: list[str], many: int, trailing: bool, offset: int | None, limit: int | None, chunk: int
) -> None:
    """Streaming in chunks of any size gives exactly the spec's result on the whole string."""
    text = "\n".join(lines + [f"n{i}" for i in range(many)]) + ("\n" if trailing else "")
    # at most ~500 reads per example: worker-thread round trips dominate the run time
    chunk = max(chunk, len(text.encode()) // 500)
    options = ReadToolOptions(whole_file_limit=0, chunk_size=chunk)

    async def main(tmp: str) -> None:
        try:
            expected = _reference(text, "f.txt", offset, limit)
        except ToolError as exc:
            with pytest.raises(ToolError) as info:
                await read_file("f.txt", tmp, OPS, offset=offset, limit=limit, options=options)
            assert str(info.value) == str(exc)
            return
        result = await read_file("f.txt", tmp, OPS, offset=offset, limit=limit, options=options)
        assert (result.text, result.details) == expected
        whole = await read_file("f.txt", tmp, OPS, offset=offset, limit=limit)
        assert (whole.text, whole.details) == expected

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "f.txt").write_bytes(text.encode())
        trio.run(main, tmp)


async def test_streaming_utf16_and_latin1(tmp_path: Path) -> None:
    text = "".join(f"zeile {i} ä\n" for i in range(1, 3001))
    (tmp_path / "u16.txt").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (tmp_path / "l1.txt").write_bytes(text.encode("cp1252"))
    options = ReadToolOptions(whole_file_limit=0, chunk_size=777)
    u16 = await read(tmp_path, options, path="u16.txt", offset=2999)
    assert u16.text == "zeile 2999 ä\nzeile 3000 ä\n"
    l1 = await read(tmp_path, options, path="l1.txt", offset=10, limit=2)
    assert l1.text == (
        "zeile 10 ä\nzeile 11 ä\n\n[2990 more lines in file. Use offset=12 to continue.]"
        "\n\n[Decoded as Windows-1252: the file is not valid UTF-8.]"
    )


_BIG_READ = """
import json, re, sys, time, trio
from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import read_file

async def main():
    ops = LocalFileOperations()
    started = time.monotonic()
    limited = await read_file(sys.argv[1], "/", ops, offset=1_000_000, limit=2000)
    middle = time.monotonic()
    whole = await read_file(sys.argv[1], "/", ops, offset=1_000_000)
    print(json.dumps({
        "limited": [limited.text[:13], limited.text[-80:]],
        "whole": whole.text[-90:],
        "details": whole.details["truncation"]["totalBytes"],
        # VmHWM: peak resident memory of this process image (ru_maxrss survives exec)
        "peak_kib": int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]),
        "seconds": [middle - started, time.monotonic() - middle],
    }))

trio.run(main)
"""


def test_one_gigabyte_file_is_streamed(tmp_path: Path) -> None:
    """Lines 1,000,000-1,002,000 of a 1 GiB file, in a fresh process: peak memory stays far
    below the file size (sparse tail: the file occupies little disk)."""
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.write(b"".join(b"line %d\n" % i for i in range(1, 1_003_001)))
        handle.truncate(1 << 30)
    out = json.loads(
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_BIG_READ), str(big)],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout
    )
    assert out["limited"] == [
        "line 1000000\n",
        "\n".join(
            [
                "",
                "line 1001998",
                "line 1001999",
                "",
                "[1002 more lines in file. Use offset=1002000 to continue.]",
            ]
        )[-80:],
    ]
    assert out["whole"].endswith(
        "line 1001999\n\n[Showing lines 1000000-1001999 of 1003001. Use offset=1002000 to continue.]"
    )
    assert out["details"] == (1 << 30) - len(
        b"".join(b"line %d\n" % i for i in range(1, 1_000_000))
    )
    assert out["peak_kib"] < 150 * 1024, out


async def test_special_files(tmp_path: Path) -> None:
    """A file whose size stat reports as 0 (/proc) is still read; devices are refused, never
    read forever."""
    result = await read(tmp_path, path="/proc/version")
    assert result.text.startswith("Linux version")
    assert await read_error(tmp_path, path="/dev/zero") == (
        "Cannot read /dev/zero: not a regular file (a device, FIFO or socket)."
    )


async def test_resize_limits_from_model_input_limits(tmp_path: Path) -> None:
    """Seed §十二: ctx.model.inputLimits.images.resize wins over the tool options."""
    (tmp_path / "p.png").write_bytes(_image_bytes("PNG", (400, 200)))
    definition = create_read_tool_definition(str(tmp_path), OPS)
    ctx = {
        "model": {
            "input": ["text", "image"],
            "inputLimits": {"images": {"resize": {"maxWidth": 100}}},
        }
    }
    result = await definition.execute("c", {"path": "p.png"}, None, ctx)
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Read image file [image/png]\n[Image: original 400x200, displayed at 100x50. "
        "Multiply coordinates by 4.00 to map to original image.]"
    )


async def test_utf16_without_bom_decoded(tmp_path: Path) -> None:
    (tmp_path / "le.txt").write_bytes("hello wörld\r\n".encode("utf-16-le"))
    (tmp_path / "be.txt").write_bytes("hi there\n".encode("utf-16-be"))
    assert (await read(tmp_path, path="le.txt")).text == "hello wörld\r\n"
    assert (await read(tmp_path, path="be.txt")).text == "hi there\n"


@pytest.mark.parametrize(
    ("data", "label"),
    [
        (b"plain\n", "UTF-8"),
        (b"\xef\xbb\xbfbom\r\n", "UTF-8"),
        (b"\xff\xfeh\x00i\x00", "UTF-16LE"),
        (b"\xfe\xff\x00h\x00i", "UTF-16BE"),
        ("h\u00e9".encode("utf-16-le"), "UTF-16LE"),
        (b"caf\xe9 \x93q\x94", "Windows-1252"),
        (b"x\x81y", "Latin-1 (ISO-8859-1)"),
    ],
)
def test_encodings_round_trip(data: bytes, label: str) -> None:
    """What edit needs from decision 7: decode then encode gives the same bytes."""
    from pi_builtin_tools.files.encoding import decode_text, detect_encoding, encode_text

    encoding = detect_encoding(data)
    assert encoding is not None and encoding.label == label
    assert encode_text(decode_text(data, encoding), encoding) == data
