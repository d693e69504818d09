"""edit on the bytes (UTF-8 without CR, exact matches) gives the texts of the decoded path, and
takes files past :data:`MAX_EDIT_FILE_BYTES` up to :data:`MAX_EDIT_LARGE_FILE_BYTES` with the
file held once (``docs/explanation/performance.md``, P6)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from memory_support import MIB, run_pi_measured
from pi_builtin_tools.files.edit import (
    MAX_EDIT_FILE_BYTES,
    MAX_EDIT_LARGE_FILE_BYTES,
    _decode_text,
    _details_of,
    _edit_bytes,
    _NeedsDecodedText,
    _utf8_without_cr,
    create_edit_tool_definition,
)
from pi_builtin_tools.files.edit_diff import (
    apply_edits,
    generate_diff_string,
    generate_unified_patch,
    line_diff,
)
from pi_core import AgentToolResult, ToolError
from pi_core.backends import LocalFileOperations

# -- the bytes path against the decoded path -------------------------------------------------


def decoded_outcome(data: bytes, edits: list[dict[str, str]]) -> tuple[bytes, dict] | str:
    try:
        file = _decode_text(data, "f.txt")
        applied = apply_edits(file.text, edits, "f.txt")
        new = file.encode(applied.new_text, "f.txt")
        return new, _details_of(line_diff(applied.base_content, applied.new_content), "f.txt")
    except ToolError as exc:
        return str(exc)


def bytes_outcome(data: bytes, edits: list[dict[str, str]]) -> tuple[bytes, dict] | str | None:
    bom = _utf8_without_cr(data)
    assert bom is not None
    try:
        done = _edit_bytes(data, bom, edits, "f.txt")
    except _NeedsDecodedText:
        return None
    except ToolError as exc:
        return str(exc)
    return b"".join(done.pieces), done.details


WORDS = ["alpha", "beta", "", "}", "  return x", "é ü", "beta", "😀 wide"]


def random_case(rng: random.Random) -> tuple[bytes, list[dict[str, str]]]:
    lines = [rng.choice(WORDS) for _ in range(rng.randint(1, 40))]
    text = "\n".join(lines) + rng.choice(["", "\n"])
    if rng.random() < 0.2:
        text = "\ufeff" + text
    edits = []
    body = text.lstrip("\ufeff")
    for _ in range(rng.randint(1, 3)):
        if not body:
            break
        start = rng.randrange(len(body))
        end = min(len(body), start + rng.randint(1, 12))
        new = rng.choice(["", "X", "new\nlines\n", body[start:end], "é\n"])
        edits.append({"oldText": body[start:end], "newText": new})
    if not edits:
        edits.append({"oldText": "zz", "newText": "y"})
    return text.encode(), edits


def test_bytes_path_gives_the_decoded_paths_texts_and_errors() -> None:
    rng = random.Random(424242)
    compared = 0
    for _ in range(3000):
        data, edits = random_case(rng)
        got = bytes_outcome(data, edits)
        if got is None:
            continue
        compared += 1
        assert got == decoded_outcome(data, edits), (data, edits)
    assert compared > 2000


@pytest.mark.parametrize(
    ("data", "edits"),
    [
        (b"a\nb\nc", [{"oldText": "c", "newText": "C"}]),  # no trailing newline
        (b"\xef\xbb\xbfa\nb\n", [{"oldText": "a", "newText": "A"}]),  # BOM, first line
        (b"\xef\xbb\xbfa\nb\n", [{"oldText": "b\n", "newText": ""}]),
        (b"a\nb\n", [{"oldText": "a\r\nb", "newText": "x"}]),  # CRLF in oldText matches LF
        (b"a\na\nb\n", [{"oldText": "b", "newText": "a"}]),  # the added line repeats
        (b"x\ny\n", [{"oldText": "x", "newText": "x"}]),  # no change
        (b"x\ny\n", [{"oldText": "x", "newText": "q"}, {"oldText": "x\ny", "newText": "w"}]),
        (b"ab\nab\n", [{"oldText": "ab", "newText": "c"}]),  # duplicate
        (b"x\ny\n", [{"oldText": "y", "newText": "1"}, {"oldText": "", "newText": "2"}]),
    ],
)
def test_bytes_path_edge_cases(data: bytes, edits: list[dict[str, str]]) -> None:
    assert bytes_outcome(data, edits) == decoded_outcome(data, edits)


@pytest.mark.parametrize(
    "data",
    [b"a\r\nb\r\n", b"a\rb", b"caf\xe9\n", b"\xff\xfea\x00"],
)
def test_bytes_path_is_only_for_utf8_without_cr(data: bytes) -> None:
    assert _utf8_without_cr(data) is None


def test_new_text_with_cr_stays_on_the_bytes_path_as_lf() -> None:
    # a file without CR writes every line break of newText as LF, as the decoded path does
    done = _edit_bytes(b"a\nb\n", 0, [{"oldText": "a", "newText": "x\ry\r\nz"}], "f.txt")
    assert b"".join(done.pieces) == b"x\ny\nz\nb\n"


def test_fuzzy_match_goes_to_the_decoded_path() -> None:
    with pytest.raises(_NeedsDecodedText):
        _edit_bytes(b"it\xe2\x80\x99s\n", 0, [{"oldText": "it's", "newText": "x"}], "f.txt")


# -- large files through the tool ------------------------------------------------------------


async def edit(cwd: Path, params: Any) -> AgentToolResult:
    tool = create_edit_tool_definition(str(cwd), LocalFileOperations())
    assert tool.prepare_arguments is not None
    return await tool.execute("c1", tool.prepare_arguments(params), None, None)


async def edit_error(cwd: Path, params: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await edit(cwd, params)
    return str(caught.value)


LINES = 800_000  # 10.4 MB of "line 0000000\n": over MAX_EDIT_FILE_BYTES


def big_text(lines: int = LINES) -> str:
    return "".join(f"line {i:07d}\n" for i in range(lines))


def test_big_text_is_over_the_decoded_limit() -> None:
    assert len(big_text()) > MAX_EDIT_FILE_BYTES


def expected_details(old: str, new: str) -> dict[str, Any]:
    """Pi 1.6's details: both the diff and the patch of the texts without the BOM."""
    display = generate_diff_string(old, new)
    details: dict[str, Any] = {
        "diff": display.diff,
        "patch": generate_unified_patch("big.txt", old, new),
    }
    if display.first_changed_line is not None:
        details["firstChangedLine"] = display.first_changed_line
    return details


@pytest.mark.parametrize(
    ("bom", "tail", "old", "new"),
    [
        ("", "", "line 0400000", "changed"),
        ("", "", "line 0000000\nline 0000001\n", ""),
        ("\ufeff", "", "line 0000000", "first"),
        ("", "last line", "last line", "LAST\nLINES\n"),
        ("", "", "line 0799999\n", "line 0799999\nline 0799999\nline 0799999\n"),
    ],
)
async def test_large_file_edit_has_the_texts_of_the_whole_diff(
    tmp_path: Path, bom: str, tail: str, old: str, new: str
) -> None:
    text = big_text() + tail
    (tmp_path / "big.txt").write_bytes((bom + text).encode())
    result = await edit(tmp_path, {"path": "big.txt", "edits": [{"oldText": old, "newText": new}]})
    after = text.replace(old, new, 1)
    assert (tmp_path / "big.txt").read_bytes() == (bom + after).encode()
    assert result.text == "Successfully replaced 1 block(s) in big.txt."
    assert result.details == expected_details(text, after)


async def test_large_file_multi_edit(tmp_path: Path) -> None:
    text = big_text()
    (tmp_path / "big.txt").write_bytes(text.encode())
    edits = [
        {"oldText": "line 0500010", "newText": "ten"},
        {"oldText": "line 0500000\n", "newText": ""},
    ]
    result = await edit(tmp_path, {"path": "big.txt", "edits": edits})
    after = text.replace("line 0500010", "ten").replace("line 0500000\n", "")
    assert (tmp_path / "big.txt").read_bytes() == after.encode()
    assert result.details == expected_details(text, after)


SHOWN_LIMITS = (
    "It is larger than edit handles (8.0MB or 400000 lines; up to 128.0MB for UTF-8 text "
    "without CR line endings whose old texts match exactly); change it with bash (sed, a "
    "script) instead."
)


async def test_large_crlf_file_is_refused(tmp_path: Path) -> None:
    data = big_text().replace("\n", "\r\n").encode()
    (tmp_path / "big.txt").write_bytes(data)
    assert (
        await edit_error(
            tmp_path, {"path": "big.txt", "edits": [{"oldText": "line 0000001", "newText": "x"}]}
        )
        == f"Could not edit file: big.txt. {SHOWN_LIMITS}"
    )
    assert (tmp_path / "big.txt").read_bytes() == data


async def test_large_binary_file_is_refused_as_binary(tmp_path: Path) -> None:
    data = b"\x00\x01" * (5 * MIB)
    (tmp_path / "big.bin").write_bytes(data)
    assert await edit_error(
        tmp_path, {"path": "big.bin", "edits": [{"oldText": "a", "newText": "x"}]}
    ) == (
        "Could not edit file: big.bin. It is a binary file (10.0MB), not text; edit only "
        "changes text files."
    )


async def test_large_file_over_the_large_limit_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.txt"
    path.touch()
    os.truncate(path, MAX_EDIT_LARGE_FILE_BYTES + 1)  # sparse: reading it would take 128 MiB
    assert (
        await edit_error(
            tmp_path, {"path": "huge.txt", "edits": [{"oldText": "a", "newText": "x"}]}
        )
        == f"Could not edit file: huge.txt. {SHOWN_LIMITS}"
    )
    assert path.stat().st_size == MAX_EDIT_LARGE_FILE_BYTES + 1


async def test_large_file_errors(tmp_path: Path) -> None:
    data = big_text().encode()
    (tmp_path / "big.txt").write_bytes(data)

    def call(*pairs: tuple[str, str]) -> dict[str, Any]:
        return {"path": "big.txt", "edits": [{"oldText": o, "newText": n} for o, n in pairs]}

    assert await edit_error(tmp_path, call(("line 0000001 ", "x"))) == (
        "Could not find the exact text in big.txt. The old text must match exactly including "
        "all whitespace and newlines; in a file over 8.0MB it is not looked up approximately "
        "and no closest match is shown."
    )
    assert await edit_error(tmp_path, call(("line 0000001", "x"), ("nope", "y"))) == (
        "Could not find edits[1] in big.txt. The oldText must match exactly including "
        "all whitespace and newlines; in a file over 8.0MB it is not looked up approximately "
        "and no closest match is shown."
    )
    assert await edit_error(tmp_path, call(("line 000000", "x"))) == (
        "Found 10 occurrences of the text in big.txt. The text must be unique. Please provide "
        "more context to make it unique."
    )
    assert await edit_error(tmp_path, call(("line 0000001", "x"), ("line 0799999", "y"))) == (
        "Could not edit file: big.txt. Its edits span more than edit handles in a file this "
        "large (8.0MB from the first changed line to the last); make them in separate calls, "
        "or change it with bash (sed, a script) instead."
    )
    assert (tmp_path / "big.txt").read_bytes() == data


def test_edit_of_one_line_of_a_50mb_file_stays_under_128mb(tmp_path: Path) -> None:
    """P6: the file is held once (bytes); the new file is written as head, new line, tail."""
    line = b"%07d " + b"x" * 91 + b"\n"  # 100 bytes
    with open(tmp_path / "fifty.txt", "wb") as f:
        for start in range(0, 500_000, 10_000):
            f.write(b"".join(line % i for i in range(start, start + 10_000)))
    arguments = {"path": "fifty.txt", "edits": [{"oldText": "0250000 x", "newText": "X"}]}
    result = run_pi_measured("call", "edit", json.dumps(arguments), "--json", cwd=tmp_path)
    assert result.status == 0, result.out[-500:]
    details = json.loads(result.out)["details"]
    assert details["firstChangedLine"] == 250001
    assert details["diff"].splitlines()[5:8] == [
        "-250001 0250000 " + "x" * 91,
        "+250001 X" + "x" * 90,
        " 250002 0250001 " + "x" * 91,
    ]
    after = (tmp_path / "fifty.txt").read_bytes()
    assert len(after) == 50_000_000 - 8
    assert after[250_000 * 100 : 250_000 * 100 + 10] == b"X" + b"x" * 9
    assert result.peak <= 128 * MIB
