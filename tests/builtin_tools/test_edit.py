"""The ``edit`` tool (seed §十三; spec §7.3, §8.7–§8.10, §10 rows 18–22; port decisions 7, 10).

Every scenario of §8.7–§8.10, every ``edit-*`` conformance case and every edit case of
``shared/cases`` (case id in the test name), with more members of each fault kind. The tool runs
on real files through :class:`LocalFileOperations`; texts and bytes are exact.
"""

from __future__ import annotations

import errno
import os
import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files.edit import (
    EDIT_PARAMETERS,
    compute_edits_diff,
    create_edit_tool_definition,
    prepare_edit_arguments,
)
from pi_builtin_tools.files.local import LocalFileOperations
from pi_core import AgentContext, LoopConfig
from pi_core._abort import Abort
from pi_core._errors import ToolError
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._tools.definition import wrap_tool_definition
from pi_core._wire.messages import AgentToolResult, ToolCall
from support import text

pytestmark = pytest.mark.filterwarnings("error")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


async def edit(cwd: Path, params: Any, ops: Any = None) -> AgentToolResult:
    """``prepare_arguments`` then ``execute``, as the loop does (validation aside)."""
    tool = create_edit_tool_definition(str(cwd), ops or LocalFileOperations())
    assert tool.prepare_arguments is not None
    return await tool.execute("c1", tool.prepare_arguments(params), None, None)


async def edit_error(cwd: Path, params: Any, ops: Any = None) -> str:
    with pytest.raises(ToolError) as caught:
        await edit(cwd, params, ops)
    return str(caught.value)


def one(old: str, new: str, path: str = "f.txt") -> dict[str, Any]:
    return {"path": path, "edits": [{"oldText": old, "newText": new}]}


def put(root: Path, name: str, data: bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


async def call_through_loop(
    cwd: Path, arguments: Any, ops: Any = None, abort: Abort | None = None
) -> tuple[str, bool]:
    """One call through the whole pipeline (prepare, validate, execute): text and isError."""
    tool = wrap_tool_definition(create_edit_tool_definition(str(cwd), ops or LocalFileOperations()))
    outcome = await run_tool_call(
        ToolCall(id="c1", name="edit", arguments=arguments),
        AgentContext(tools=[tool]),
        LoopConfig(),
        abort=abort,
    )
    return outcome.result.text, outcome.is_error


NOT_FOUND = (
    "Could not find the exact text in {path}. The old text must match exactly including all "
    "whitespace and newlines."
)


# ---------------------------------------------------------------------------------------------
# Definition (spec §7.3; §8.10 #124)
# ---------------------------------------------------------------------------------------------


def test_definition_is_pis() -> None:
    tool = create_edit_tool_definition("/tmp", LocalFileOperations())
    assert (tool.name, tool.label) == ("edit", "edit")
    assert tool.description == (
        "Edit a single file using exact text replacement. Every edits[].oldText must match a "
        "unique, non-overlapping region of the original file. If two changes affect the same "
        "block or nearby lines, merge them into one edit instead of emitting overlapping edits. "
        "Do not include large unchanged regions just to connect distant changes."
    )
    assert tool.prompt_snippet == (
        "Make precise file edits with exact text replacement, including multiple disjoint edits "
        "in one call"
    )
    assert tool.prompt_guidelines == [
        "Use edit for precise changes (edits[].oldText must match exactly)",
        "When changing multiple separate locations in one file, use one edit call with multiple "
        "entries in edits[] instead of multiple edit calls",
        "Each edits[].oldText is matched against the original file, not after earlier edits are "
        "applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
        "Keep edits[].oldText as small as possible while still being unique in the file. Do not "
        "pad with large unchanged regions.",
    ]
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Path to the file to edit (relative or absolute)",
            },
            "edits": {
                "type": "array",
                "description": (
                    "One or more targeted replacements. Each edit is matched against the "
                    "original file, not incrementally. Do not include overlapping or nested "
                    "edits. If two changes touch the same block or nearby lines, merge them "
                    "into one edit instead."
                ),
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {
                            "type": "string",
                            "description": (
                                "Exact text for one targeted replacement. It must be unique in "
                                "the original file and must not overlap with any other "
                                "edits[].oldText in the same call."
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


def test_scenario_124_public_schema_has_no_legacy_fields() -> None:
    assert set(EDIT_PARAMETERS["properties"]) == {"path", "edits"}


# ---------------------------------------------------------------------------------------------
# §8.7 core
# ---------------------------------------------------------------------------------------------


async def test_scenario_85_single_replacement(
    tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    put(tmp_path, "hello.txt", b"Hello, world!")
    result = await edit(tmp_path, one("world", "testing", "hello.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in hello.txt."
    assert result.details == {
        "diff": "-1 Hello, world!\n+1 Hello, testing!",
        "patch": "--- hello.txt\n+++ hello.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n"
        "\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n",
        "firstChangedLine": 1,
    }
    assert (tmp_path / "hello.txt").read_bytes() == b"Hello, testing!"
    assert_patch_applies(tmp_path, b"Hello, world!", result, "hello.txt", require_program)


async def test_scenario_86_not_found(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"Hello, world!")
    assert await edit_error(tmp_path, one("nonexistent", "testing")) == (
        NOT_FOUND.format(path="f.txt") + "\nFile starts with:\n  1: Hello, world!"
    )


async def test_scenario_87_not_found_context(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"alpha\nbeta\ngamma\ndelta\n")
    assert await edit_error(tmp_path, one("nonexistent", "testing")) == (
        NOT_FOUND.format(path="f.txt")
        + "\nFile starts with:\n  1: alpha\n  2: beta\n  3: gamma\n  4: delta\n  5: "
    )


async def test_scenario_88_closest_match(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"//  Talks\nconst x = 1;\n//  More\n")
    params = one("// Talks\nconst x = 1;", "// Updated\nconst x = 2;")
    assert await edit_error(tmp_path, params) == (
        NOT_FOUND.format(path="f.txt")
        + "\nFile starts with:\n  1: //  Talks\n  2: const x = 1;\n  3: //  More\n  4: "
    )


async def test_scenario_89_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.txt")
    assert await edit_error(tmp_path, one("hello", "world", missing)) == (
        f"Could not edit file: {missing}. Error code: ENOENT."
    )


async def test_scenario_90_duplicates(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"foo foo foo")
    assert await edit_error(tmp_path, one("foo", "bar")) == (
        "Found 3 occurrences of the text in f.txt. The text must be unique. Please provide more "
        "context to make it unique."
    )
    assert (tmp_path / "f.txt").read_bytes() == b"foo foo foo"


async def test_scenario_91_two_disjoint_edits(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"alpha\nbeta\ngamma\ndelta\n")
    params = {
        "path": "f.txt",
        "edits": [
            {"oldText": "alpha\n", "newText": "ALPHA\n"},
            {"oldText": "gamma\n", "newText": "GAMMA\n"},
        ],
    }
    result = await edit(tmp_path, params)
    assert text(result) == "Successfully replaced 2 block(s) in f.txt."
    assert (tmp_path / "f.txt").read_bytes() == b"ALPHA\nbeta\nGAMMA\ndelta\n"
    assert result.details["diff"] == "-1 alpha\n+1 ALPHA\n 2 beta\n-3 gamma\n+3 GAMMA\n 4 delta"


async def test_scenario_92_large_gap_is_collapsed(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", "".join(f"line {i:03d}\n" for i in range(1, 601)).encode())
    params = {
        "path": "f.txt",
        "edits": [{"oldText": f"line {n}\n", "newText": f"LINE {n}\n"} for n in (100, 300, 500)],
    }
    result = await edit(tmp_path, params)
    diff = result.details["diff"]
    assert diff == (
        "     ...\n  96 line 096\n  97 line 097\n  98 line 098\n  99 line 099\n-100 line 100\n"
        "+100 LINE 100\n 101 line 101\n 102 line 102\n 103 line 103\n 104 line 104\n     ...\n"
        " 296 line 296\n 297 line 297\n 298 line 298\n 299 line 299\n-300 line 300\n"
        "+300 LINE 300\n 301 line 301\n 302 line 302\n 303 line 303\n 304 line 304\n     ...\n"
        " 496 line 496\n 497 line 497\n 498 line 498\n 499 line 499\n-500 line 500\n"
        "+500 LINE 500\n 501 line 501\n 502 line 502\n 503 line 503\n 504 line 504\n     ..."
    )
    assert "line 250" not in diff and len(diff.split("\n")) < 50
    assert result.details["firstChangedLine"] == 100


async def test_scenario_93_edits_match_the_original(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"foo\nbar\nbaz\n")
    params = {
        "path": "f.txt",
        "edits": [
            {"oldText": "foo\n", "newText": "foo bar\n"},
            {"oldText": "bar\n", "newText": "BAR\n"},
        ],
    }
    await edit(tmp_path, params)
    assert (tmp_path / "f.txt").read_bytes() == b"foo bar\nBAR\nbaz\n"


async def test_scenario_94_empty_edits(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"hello\nworld\n")
    assert await edit_error(tmp_path, {"path": "f.txt", "edits": []}) == (
        "Edit tool input is invalid. edits must contain at least one replacement."
    )


async def test_scenario_95_overlap(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"one\ntwo\nthree\n")
    params = {
        "path": "f.txt",
        "edits": [
            {"oldText": "one\ntwo\n", "newText": "ONE\nTWO\n"},
            {"oldText": "two\nthree\n", "newText": "TWO\nTHREE\n"},
        ],
    }
    assert await edit_error(tmp_path, params) == (
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    assert (tmp_path / "f.txt").read_bytes() == b"one\ntwo\nthree\n"


async def test_scenario_96_no_partial_application(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"alpha\nbeta\ngamma\n")
    params = {
        "path": "f.txt",
        "edits": [
            {"oldText": "alpha\n", "newText": "ALPHA\n"},
            {"oldText": "missing\n", "newText": "M\n"},
        ],
    }
    assert await edit_error(tmp_path, params) == (
        "Could not find edits[1] in f.txt. The oldText must match exactly including all "
        "whitespace and newlines.\nFile starts with:\n  1: alpha\n  2: beta\n  3: gamma\n  4: "
    )
    assert (tmp_path / "f.txt").read_bytes() == b"alpha\nbeta\ngamma\n"


async def test_scenario_97_read_only_file(tmp_path: Path) -> None:
    """Refused even as root: a file with no write bit is never replaced (file_access)."""
    path = put(tmp_path, "ro.txt", b"hello\n")
    path.chmod(0o444)
    assert await edit_error(tmp_path, one("hello", "world", str(path))) == (
        f"Could not edit file: {path}. Error code: EACCES."
    )
    assert path.read_bytes() == b"hello\n"
    assert os.stat(path).st_mode & 0o777 == 0o444


class DeniedOperations(LocalFileOperations):
    """A backend that denies write access (what a read-only file gives a non-root user)."""

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        if mode & os.W_OK:
            raise PermissionError(errno.EACCES, "Permission denied", path)


async def test_scenario_97_access_denied_by_the_backend(tmp_path: Path) -> None:
    put(tmp_path, "ro.txt", b"hello\n")
    assert await edit_error(tmp_path, one("hello", "world", "ro.txt"), DeniedOperations()) == (
        "Could not edit file: ro.txt. Error code: EACCES."
    )
    assert (tmp_path / "ro.txt").read_bytes() == b"hello\n"


class OfflineOperations(LocalFileOperations):
    """A backend whose file system is gone: every look-up fails with a plain error."""

    async def stat(self, path: str) -> Any:
        raise RuntimeError("disk offline")

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        raise RuntimeError("disk offline")


async def test_scenario_98_error_without_code(tmp_path: Path) -> None:
    assert await edit_error(tmp_path, one("hello", "world", "broken.txt"), OfflineOperations()) == (
        "Could not edit file: broken.txt. Error: disk offline."
    )


async def test_scenario_99_compute_edits_diff(tmp_path: Path) -> None:
    ops = LocalFileOperations()
    missing = str(tmp_path / "missing-preview.txt")
    assert await compute_edits_diff(
        missing, [{"oldText": "hello", "newText": "world"}], str(tmp_path), ops
    ) == {"error": f"Could not edit file: {missing}. Error code: ENOENT."}
    put(tmp_path, "preview.txt", b"line one\nline two\nline three\n")
    preview = await compute_edits_diff(
        "preview.txt", [{"oldText": "does not exist", "newText": "x"}], str(tmp_path), ops
    )
    assert preview == {
        "error": NOT_FOUND.format(path="preview.txt")
        + "\nFile starts with:\n  1: line one\n  2: line two\n  3: line three\n  4: "
    }
    assert await compute_edits_diff(
        "preview.txt", [{"oldText": "two", "newText": "2"}], str(tmp_path), ops
    ) == {"diff": " 1 line one\n-2 line two\n+2 line 2\n 3 line three", "firstChangedLine": 2}
    assert (tmp_path / "preview.txt").read_bytes() == b"line one\nline two\nline three\n"


async def test_scenario_99_compute_edits_diff_unreadable(tmp_path: Path) -> None:
    class Unreadable(LocalFileOperations):
        async def access(self, path: str, mode: int = os.R_OK) -> None:
            raise PermissionError(errno.EACCES, "Permission denied", path)

    put(tmp_path, "u.txt", b"hello\n")
    assert await compute_edits_diff(
        "u.txt", [{"oldText": "hello", "newText": "world"}], str(tmp_path), Unreadable()
    ) == {"error": "Could not edit file: u.txt. Error code: EACCES."}


async def test_scenario_100_empty_old_text(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"content\n")
    assert await edit_error(tmp_path, one("", "new")) == "oldText must not be empty in f.txt."
    params = {
        "path": "f.txt",
        "edits": [{"oldText": "content", "newText": "x"}, {"oldText": "", "newText": "y"}],
    }
    assert await edit_error(tmp_path, params) == "edits[1].oldText must not be empty in f.txt."
    assert (tmp_path / "f.txt").read_bytes() == b"content\n"


async def test_scenario_101_identical_replacement(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"keep\nthis\n")
    assert await edit_error(tmp_path, one("keep", "keep")) == (
        "No changes made to f.txt. The replacement produced identical content. This might "
        "indicate an issue with special characters or the text not existing as expected."
    )
    params = {
        "path": "f.txt",
        "edits": [{"oldText": "keep", "newText": "keep"}, {"oldText": "this", "newText": "this"}],
    }
    assert await edit_error(tmp_path, params) == (
        "No changes made to f.txt. The replacements produced identical content."
    )


async def test_scenario_102_multi_duplicate(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"a\nfoo foo foo\n")
    params = {
        "path": "f.txt",
        "edits": [{"oldText": "a", "newText": "A"}, {"oldText": "foo", "newText": "x"}],
    }
    assert await edit_error(tmp_path, params) == (
        "Found 3 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide "
        "more context to make it unique."
    )


# ---------------------------------------------------------------------------------------------
# §8.8 fuzzy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "pairs", "expected"),
    [
        # 103 trailing whitespace
        (
            "line one   \nline two  \nline three\n",
            [("line one\nline two\n", "replaced\n")],
            "replaced\nline three\n",
        ),
        # 104 full-width Chinese punctuation
        (
            "你好，世界\n你好（世界）\n",
            [("你好,世界\n你好(世界)\n", "你好，pi\n你好(pi)\n")],
            "你好，pi\n你好(pi)\n",
        ),
        # 105 NFKC: full-width letters, decomposed accent
        (
            "ＡＢＣ１２３\ncafe\u0301\n",
            [("ABC123\ncafé\n", "XYZ789\ncoffee\n")],
            "XYZ789\ncoffee\n",
        ),
        # 106 smart single quotes
        (
            "console.log(‘hello’);\n",
            [("console.log('hello');", "console.log('world');")],
            "console.log('world');\n",
        ),
        # 107 smart double quotes
        (
            "say(“Hello World”);\n",
            [('say("Hello World");', 'say("Goodbye");')],
            'say("Goodbye");\n',
        ),
        # 108 dashes
        (
            "range 1–5\nbreak—here\n",
            [("range 1-5\nbreak-here", "range 10-50\nbreak-there")],
            "range 10-50\nbreak-there\n",
        ),
        # 109 NBSP
        ("hello\u00a0world\n", [("hello world", "hello universe")], "hello universe\n"),
        # 110 exact preferred: the other line is untouched
        (
            "const x = 'exact';\nconst y = 'other';\n",
            [("const x = 'exact';", "const x = 'changed';")],
            "const x = 'changed';\nconst y = 'other';\n",
        ),
        # 113 fuzzy multi-edit
        (
            "console.log(‘hello’);\nhello\u00a0world\n",
            [
                ("console.log('hello');\n", "console.log('world');\n"),
                ("hello world\n", "hello universe\n"),
            ],
            "console.log('world');\nhello universe\n",
        ),
        # 114 the right occurrence is kept
        ("replace me   \nafter   \n", [("replace me\n", "after\n")], "after\nafter   \n"),
        # 115 untouched lines keep their bytes
        (
            "keep before  \nfirst target  \nfirst after\nkeep middle   \nsecond target  \n"
            "second after\nkeep after  \n",
            [
                ("first target\nfirst after", "FIRST\nFIRST2"),
                ("second target\nsecond after", "SECOND\nSECOND2"),
            ],
            "keep before  \nFIRST\nFIRST2\nkeep middle   \nSECOND\nSECOND2\nkeep after  \n",
        ),
    ],
    ids=["103", "104", "105", "106", "107", "108", "109", "110", "113", "114", "115"],
)
async def test_scenarios_103_to_115_fuzzy(
    tmp_path: Path,
    original: str,
    pairs: list[tuple[str, str]],
    expected: str,
    require_program: Callable[[str], str],
) -> None:
    put(tmp_path, "f.txt", original.encode())
    params = {"path": "f.txt", "edits": [{"oldText": o, "newText": n} for o, n in pairs]}
    result = await edit(tmp_path, params)
    assert text(result) == f"Successfully replaced {len(pairs)} block(s) in f.txt."
    assert (tmp_path / "f.txt").read_text() == expected
    assert_patch_applies(tmp_path, original.encode(), result, "f.txt", require_program)


async def test_scenario_111_fuzzy_still_fails_when_absent(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"console.log(\xe2\x80\x98hello\xe2\x80\x99);\n")
    assert await edit_error(tmp_path, one("console.log('bye');", "x")) == (
        NOT_FOUND.format(path="f.txt") + "\nFile starts with:\n  1: console.log(‘hello’);\n  2: "
    )
    # a first line of 20+ characters is looked for by its prefixes (the exact text, not fuzzy)
    message = await edit_error(tmp_path, one("console.log(‘hello’); // comment", "x"))
    assert message == (
        NOT_FOUND.format(path="f.txt")
        + "\nClosest match is around line 1:\n  1: console.log(‘hello’);\n  2: "
    )


async def test_scenario_112_duplicates_after_normalisation(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"hello world   \nhello world\n")
    assert await edit_error(tmp_path, one("hello world", "x")) == (
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more "
        "context to make it unique."
    )


async def test_scenario_115_details_are_relative_to_the_real_file(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"keep  \nfirst target  \nkeep  \n")
    result = await edit(tmp_path, one("first target", "FIRST"))
    assert (tmp_path / "f.txt").read_bytes() == b"keep  \nFIRST  \nkeep  \n"
    assert result.details == {
        "diff": " 1 keep  \n-2 first target  \n+2 FIRST  \n 3 keep  ",
        "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n keep  \n-first target  \n+FIRST  \n keep  \n",
        "firstChangedLine": 2,
    }


# ---------------------------------------------------------------------------------------------
# §8.9 line endings and BOM (decision 7 supersedes #122)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "pairs", "expected"),
    [
        # 116/117 LF oldText on a CRLF file; CRLF kept
        (
            b"first\r\nsecond\r\nthird\r\n",
            [("second\n", "REPLACED\n")],
            b"first\r\nREPLACED\r\nthird\r\n",
        ),
        # 118 LF kept
        (b"first\nsecond\nthird\n", [("second\n", "REPLACED\n")], b"first\nREPLACED\nthird\n"),
        # 120 BOM kept
        (
            b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\n",
            [("second\n", "REPLACED\n")],
            b"\xef\xbb\xbffirst\r\nREPLACED\r\nthird\r\n",
        ),
        # 121 BOM + CRLF multi-edit
        (
            b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\nfourth\r\n",
            [("second", "SECOND"), ("fourth", "FOURTH")],
            b"\xef\xbb\xbffirst\r\nSECOND\r\nthird\r\nFOURTH\r\n",
        ),
        # 122 (decision 7): untouched lines keep their own endings, lone CRs survive
        (b"a\r\nb\nc\r\n", [("b", "B")], b"a\r\nB\nc\r\n"),
        (b"a\nb\r\nc\r\n", [("b", "B")], b"a\nB\r\nc\r\n"),
        (b"a\rb\rc", [("b", "B")], b"a\rB\rc"),
        # 123 CRLF in newText follows the file
        (b"x\n", [("x", "y\r\nz")], b"y\nz\n"),
        (b"x\r\n", [("x", "y\nz")], b"y\r\nz\r\n"),
    ],
    ids=["116-117", "118", "120", "121", "122a", "122b", "122c", "123a", "123b"],
)
async def test_scenarios_116_to_123_line_endings(
    tmp_path: Path,
    original: bytes,
    pairs: list[tuple[str, str]],
    expected: bytes,
    require_program: Callable[[str], str],
) -> None:
    put(tmp_path, "f.txt", original)
    params = {"path": "f.txt", "edits": [{"oldText": o, "newText": n} for o, n in pairs]}
    result = await edit(tmp_path, params)
    assert text(result) == f"Successfully replaced {len(pairs)} block(s) in f.txt."
    assert (tmp_path / "f.txt").read_bytes() == expected
    assert_patch_applies(tmp_path, original, result, "f.txt", require_program)


async def test_scenario_119_duplicates_across_crlf_and_lf(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"hello\r\nworld\r\n---\r\nhello\nworld\n")
    assert await edit_error(tmp_path, one("hello\nworld\n", "x")) == (
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more "
        "context to make it unique."
    )


async def test_crlf_and_bom_details_are_of_the_lf_views(tmp_path: Path) -> None:
    # Pi 1.6: diff and patch both come from the LF-normalised text without the BOM
    put(tmp_path, "f.txt", b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\n")
    result = await edit(tmp_path, one("second", "REPLACED"))
    assert result.details == {
        "diff": " 1 first\n-2 second\n+2 REPLACED\n 3 third",
        "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n first\n-second\n+REPLACED\n third\n",
        "firstChangedLine": 2,
    }


# ---------------------------------------------------------------------------------------------
# §8.10 prepare_arguments
# ---------------------------------------------------------------------------------------------


def test_scenario_125_legacy_pair() -> None:
    assert prepare_edit_arguments(
        {"path": "file.txt", "oldText": "before", "newText": "after"}
    ) == {
        "path": "file.txt",
        "edits": [{"oldText": "before", "newText": "after"}],
    }


def test_scenario_126_legacy_pair_appended_last() -> None:
    args = {
        "path": "f",
        "edits": [{"oldText": "a", "newText": "b"}],
        "oldText": "c",
        "newText": "d",
    }
    assert prepare_edit_arguments(args) == {
        "path": "f",
        "edits": [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}],
    }
    assert args["edits"] == [{"oldText": "a", "newText": "b"}]  # the input is not mutated
    assert prepare_edit_arguments(
        {"path": "f", "edits": "junk", "oldText": "c", "newText": "d"}
    ) == {
        "path": "f",
        "edits": [{"oldText": "c", "newText": "d"}],
    }


def test_scenario_127_clean_input_keeps_identity() -> None:
    args = {"path": "f", "edits": [{"oldText": "a", "newText": "b"}]}
    assert prepare_edit_arguments(args) is args
    half = {"path": "f", "oldText": "a"}
    assert prepare_edit_arguments(half) is half


@pytest.mark.parametrize("value", [None, "garbage", 3, ["a"]])
def test_scenario_128_non_objects_unchanged(value: Any) -> None:
    assert prepare_edit_arguments(value) is value


async def test_scenario_129_legacy_args_execute(tmp_path: Path) -> None:
    put(tmp_path, "legacy.txt", b"before\n")
    result = await edit(tmp_path, {"path": "legacy.txt", "oldText": "before", "newText": "after"})
    assert result.content[0].model_dump(by_alias=True, exclude_none=True) == {
        "type": "text",
        "text": "Successfully replaced 1 block(s) in legacy.txt.",
    }
    assert (tmp_path / "legacy.txt").read_bytes() == b"after\n"


def test_scenario_130_edits_as_json_string() -> None:
    args = {"path": "f", "edits": '[{"oldText":"a","newText":"b"}]'}
    assert prepare_edit_arguments(args) == {
        "path": "f",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    invalid = {"path": "f", "edits": "not json"}
    assert prepare_edit_arguments(invalid) is invalid
    number = {"path": "f", "edits": "42"}
    assert prepare_edit_arguments(number) is number


def test_scenario_131_extra_keys_stripped() -> None:
    clean = {"oldText": "c", "newText": "d"}
    dirty = {"oldText": "a", "newText": "b", "newText_x": "", "in_file": "file.txt"}
    args = {"path": "f", "edits": [dirty, clean]}
    prepared = prepare_edit_arguments(args)
    assert prepared == {"path": "f", "edits": [{"oldText": "a", "newText": "b"}, clean]}
    assert prepared["edits"][1] is clean
    assert dirty["in_file"] == "file.txt"
    clean_list = [clean]
    assert prepare_edit_arguments({"path": "f", "edits": clean_list})["edits"] is clean_list


# ---------------------------------------------------------------------------------------------
# Conformance cases (shared/conformance/cases/edit-*.json)
# ---------------------------------------------------------------------------------------------


async def test_conformance_edit_argument_shapes(tmp_path: Path) -> None:
    put(tmp_path, "legacy.txt", b"before\n")
    put(tmp_path, "s.txt", b"red\ngreen\n")
    put(tmp_path, "o.txt", b"left\nright\n")
    r1 = await edit(tmp_path, {"path": "legacy.txt", "oldText": "before", "newText": "after"})
    r2 = await edit(tmp_path, {"path": "s.txt", "edits": '[{"oldText":"green","newText":"blue"}]'})
    r3 = await edit(tmp_path, {"path": "o.txt", "edits": {"oldText": "right", "newText": "RIGHT"}})
    assert [text(r) for r in (r1, r2, r3)] == [
        "Successfully replaced 1 block(s) in legacy.txt.",
        "Successfully replaced 1 block(s) in s.txt.",
        "Successfully replaced 1 block(s) in o.txt.",
    ]
    assert [r.details["diff"] for r in (r1, r2, r3)] == [
        "-1 before\n+1 after",
        " 1 red\n-2 green\n+2 blue",
        " 1 left\n-2 right\n+2 RIGHT",
    ]
    assert snapshot(tmp_path) == {
        "legacy.txt": b"after\n",
        "o.txt": b"left\nRIGHT\n",
        "s.txt": b"red\nblue\n",
    }


async def test_conformance_edit_crlf_and_bom(tmp_path: Path) -> None:
    put(tmp_path, "crlf.txt", b"first\r\nsecond\r\nthird\r\n")
    put(tmp_path, "bom.txt", b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\n")
    r1 = await edit(tmp_path, one("second\n", "REPLACED\n", "crlf.txt"))
    r2 = await edit(tmp_path, one("second", "REPLACED", "bom.txt"))
    assert text(r1) == "Successfully replaced 1 block(s) in crlf.txt."
    assert text(r2) == "Successfully replaced 1 block(s) in bom.txt."
    assert r1.details["diff"] == r2.details["diff"] == " 1 first\n-2 second\n+2 REPLACED\n 3 third"
    assert snapshot(tmp_path) == {
        "bom.txt": b"\xef\xbb\xbffirst\r\nREPLACED\r\nthird\r\n",
        "crlf.txt": b"first\r\nREPLACED\r\nthird\r\n",
    }


async def test_conformance_edit_edits_invalid_json_string(tmp_path: Path) -> None:
    put(tmp_path, "s2.txt", b"x\n")
    assert await call_through_loop(tmp_path, {"path": "s2.txt", "edits": "not json"}) == (
        'Validation failed for tool "edit":\n  - edits.0: expected object, got string\n\n'
        'Received arguments:\n{\n  "path": "s2.txt",\n  "edits": "not json"\n}',
        True,
    )
    assert (tmp_path / "s2.txt").read_bytes() == b"x\n"


async def test_conformance_edit_errors(tmp_path: Path) -> None:
    put(tmp_path, "foo.txt", b"foo foo foo\n")
    put(tmp_path, "nums.txt", b"one\ntwo\nthree\n")
    assert await edit_error(tmp_path, one("a", "b", "nope.txt")) == (
        "Could not edit file: nope.txt. Error code: ENOENT."
    )
    assert await edit_error(tmp_path, one("foo", "bar", "foo.txt")) == (
        "Found 3 occurrences of the text in foo.txt. The text must be unique. Please provide "
        "more context to make it unique."
    )
    params = {
        "path": "nums.txt",
        "edits": [
            {"oldText": "one\ntwo\n", "newText": "1\n2\n"},
            {"oldText": "two\nthree\n", "newText": "2\n3\n"},
        ],
    }
    assert await edit_error(tmp_path, params) == (
        "edits[0] and edits[1] overlap in nums.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    assert snapshot(tmp_path) == {"foo.txt": b"foo foo foo\n", "nums.txt": b"one\ntwo\nthree\n"}


async def test_conformance_edit_exact_unique_with_fuzzy_twin(tmp_path: Path) -> None:
    put(tmp_path, "twin.js", "const a = 'x';\nconst a = ‘x’;\n".encode())
    result = await edit(tmp_path, one("const a = 'x';", "const a = 1;", "twin.js"))
    assert text(result) == "Successfully replaced 1 block(s) in twin.js."
    assert (tmp_path / "twin.js").read_text() == "const a = 1;\nconst a = ‘x’;\n"


async def test_conformance_edit_extra_keys_stripped(tmp_path: Path) -> None:
    put(tmp_path, "alpha.txt", b"alpha\nbeta\n")
    arguments = {
        "path": "alpha.txt",
        "edits": [{"oldText": "beta", "newText": "BETA", "in_file": "alpha.txt"}],
    }
    assert await call_through_loop(tmp_path, arguments) == (
        "Successfully replaced 1 block(s) in alpha.txt.",
        False,
    )
    assert (tmp_path / "alpha.txt").read_bytes() == b"alpha\nBETA\n"


async def test_conformance_edit_fuzzy_keeps_untouched_lines(tmp_path: Path) -> None:
    put(tmp_path, "quotes.js", "console.log(‘hello’);\nconst s = “keep”;  \n".encode())
    result = await edit(
        tmp_path, one("console.log('hello');", "console.log('world');", "quotes.js")
    )
    assert text(result) == "Successfully replaced 1 block(s) in quotes.js."
    assert (tmp_path / "quotes.js").read_text() == "console.log('world');\nconst s = “keep”;  \n"


async def test_conformance_edit_fuzzy_trailing_whitespace(tmp_path: Path) -> None:
    put(tmp_path, "ws.txt", b"line one   \nline two  \nline three\n")
    result = await edit(tmp_path, one("line one\nline two\n", "replaced\n", "ws.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in ws.txt."
    assert (tmp_path / "ws.txt").read_bytes() == b"replaced\nline three\n"


async def test_conformance_edit_fuzzy_unicode(tmp_path: Path) -> None:
    put(tmp_path, "zh.txt", "你好，世界\n你好（世界）\n".encode())
    put(tmp_path, "misc.txt", "range 1–5\nhello\u00a0world\n".encode())
    r1 = await edit(tmp_path, one("你好,世界\n你好(世界)\n", "你好，pi\n你好(pi)\n", "zh.txt"))
    params = {
        "path": "misc.txt",
        "edits": [
            {"oldText": "range 1-5", "newText": "range 10-50"},
            {"oldText": "hello world", "newText": "hello universe"},
        ],
    }
    r2 = await edit(tmp_path, params)
    assert text(r1) == "Successfully replaced 1 block(s) in zh.txt."
    assert text(r2) == "Successfully replaced 2 block(s) in misc.txt."
    assert snapshot(tmp_path) == {
        "misc.txt": b"range 10-50\nhello universe\n",
        "zh.txt": "你好，pi\n你好(pi)\n".encode(),
    }


async def test_conformance_edit_matched_against_original(tmp_path: Path) -> None:
    put(tmp_path, "fbb.txt", b"foo\nbar\nbaz\n")
    params = {
        "path": "fbb.txt",
        "edits": [
            {"oldText": "foo\n", "newText": "foo bar\n"},
            {"oldText": "bar\n", "newText": "BAR\n"},
        ],
    }
    result = await edit(tmp_path, params)
    assert text(result) == "Successfully replaced 2 block(s) in fbb.txt."
    assert result.details["diff"] == "-1 foo\n-2 bar\n+1 foo bar\n+2 BAR\n 3 baz"
    assert (tmp_path / "fbb.txt").read_bytes() == b"foo bar\nBAR\nbaz\n"


async def test_conformance_edit_mixed_endings_kept(tmp_path: Path) -> None:
    put(tmp_path, "mixed.txt", b"a\r\nb\nc\rd\n")
    result = await edit(tmp_path, one("b", "B", "mixed.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in mixed.txt."
    assert result.details["diff"] == " 1 a\n-2 b\n+2 B\n 3 c\n 4 d"
    assert (tmp_path / "mixed.txt").read_bytes() == b"a\r\nB\nc\rd\n"


async def test_conformance_edit_multi_disjoint(tmp_path: Path) -> None:
    put(tmp_path, "greek.txt", b"alpha\nbeta\ngamma\ndelta\n")
    params = {
        "path": "greek.txt",
        "edits": [
            {"oldText": "alpha", "newText": "ALPHA"},
            {"oldText": "gamma", "newText": "GAMMA"},
        ],
    }
    result = await edit(tmp_path, params)
    assert text(result) == "Successfully replaced 2 block(s) in greek.txt."
    assert (tmp_path / "greek.txt").read_bytes() == b"ALPHA\nbeta\nGAMMA\ndelta\n"


async def test_conformance_edit_no_partial_application(tmp_path: Path) -> None:
    put(tmp_path, "greek.txt", b"alpha\nbeta\ngamma\ndelta\n")
    params = {
        "path": "greek.txt",
        "edits": [{"oldText": "alpha", "newText": "A"}, {"oldText": "missing", "newText": "X"}],
    }
    assert await call_through_loop(tmp_path, params) == (
        "Could not find edits[1] in greek.txt. The oldText must match exactly including all "
        "whitespace and newlines.\nFile starts with:\n  1: alpha\n  2: beta\n  3: gamma\n"
        "  4: delta\n  5: ",
        True,
    )
    assert (tmp_path / "greek.txt").read_bytes() == b"alpha\nbeta\ngamma\ndelta\n"


async def test_conformance_edit_not_found_context(tmp_path: Path) -> None:
    put(tmp_path, "letters.txt", b"alpha\nbeta\ngamma\ndelta\n")
    put(
        tmp_path,
        "calc.py",
        b"import math\n\n\ndef compute_total(items):\n    total = 0\n    for item in items:\n"
        b"        total += item.price\n    return total\n",
    )
    assert await edit_error(tmp_path, one("nonexistent", "x", "letters.txt")) == (
        NOT_FOUND.format(path="letters.txt")
        + "\nFile starts with:\n  1: alpha\n  2: beta\n  3: gamma\n  4: delta\n  5: "
    )
    params = one(
        "def compute_total(items):\n    total = 1\n",
        "def compute_total(items):\n    total = 2\n",
        "calc.py",
    )
    assert await edit_error(tmp_path, params) == (
        NOT_FOUND.format(path="calc.py")
        + "\nClosest match is around line 4:\n  2: \n  3: \n  4: def compute_total(items):\n"
        "  5:     total = 0\n  6:     for item in items:\n  7:         total += item.price\n"
        "  8:     return total\n  9: "
    )


async def test_conformance_edit_overlapping_occurrences(tmp_path: Path) -> None:
    put(tmp_path, "foo3.txt", b"foo\nfoo\nfoo\n")
    assert await call_through_loop(tmp_path, one("foo\nfoo\n", "bar\n", "foo3.txt")) == (
        "Found 2 occurrences of the text in foo3.txt. The text must be unique. Please provide "
        "more context to make it unique.",
        True,
    )
    assert (tmp_path / "foo3.txt").read_bytes() == b"foo\nfoo\nfoo\n"


async def test_conformance_edit_rejected_inputs(tmp_path: Path) -> None:
    put(tmp_path, "x.txt", b"content\n")
    put(tmp_path, "y.txt", b"content\n")
    put(tmp_path, "same.txt", b"keep\n")
    assert await call_through_loop(tmp_path, one("", "new", "x.txt")) == (
        "oldText must not be empty in x.txt.",
        True,
    )
    assert await call_through_loop(tmp_path, {"path": "y.txt", "edits": []}) == (
        "Edit tool input is invalid. edits must contain at least one replacement.",
        True,
    )
    assert await call_through_loop(tmp_path, one("keep", "keep", "same.txt")) == (
        "No changes made to same.txt. The replacement produced identical content. This might "
        "indicate an issue with special characters or the text not existing as expected.",
        True,
    )
    assert snapshot(tmp_path) == {
        "same.txt": b"keep\n",
        "x.txt": b"content\n",
        "y.txt": b"content\n",
    }


async def test_conformance_edit_single_replace(tmp_path: Path) -> None:
    put(tmp_path, "hello.txt", b"Hello, world!")
    assert await call_through_loop(tmp_path, one("world", "testing", "hello.txt")) == (
        "Successfully replaced 1 block(s) in hello.txt.",
        False,
    )
    assert (tmp_path / "hello.txt").read_bytes() == b"Hello, testing!"


# ---------------------------------------------------------------------------------------------
# shared/cases: each case and more members of its kind
# ---------------------------------------------------------------------------------------------


async def test_c01_edit_crlf_lf_oldtext(tmp_path: Path) -> None:
    put(tmp_path, "win.txt", b"alpha\r\nbeta\r\ngamma\r\ndelta\r\n")
    params = {
        "path": "win.txt",
        "edits": [
            {"oldText": "alpha\nbeta", "newText": "ALPHA\nBETA"},
            {"oldText": "gamma\r\ndelta", "newText": "GAMMA\r\nDELTA"},
        ],
    }
    assert text(await edit(tmp_path, params)) == "Successfully replaced 2 block(s) in win.txt."
    assert (tmp_path / "win.txt").read_bytes() == b"ALPHA\r\nBETA\r\nGAMMA\r\nDELTA\r\n"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("beta\r\ngamma\r\n", "B\nG\n", b"alpha\r\nB\r\nG\r\ndelta\r\n"),  # CRLF old, LF new
        ("beta\rgamma", "B\r\nG", b"alpha\r\nB\r\nG\r\ndelta\r\n"),  # CR-only old text
        ("delta\r\n", "DELTA\r\n\r\n", b"alpha\r\nbeta\r\ngamma\r\nDELTA\r\n\r\n"),  # at the end
        ("alpha\r\nbeta\r\ngamma\r\ndelta\r\n", "", b""),  # the whole file
    ],
)
async def test_c01_kind_crlf_members(tmp_path: Path, old: str, new: str, expected: bytes) -> None:
    put(tmp_path, "win.txt", b"alpha\r\nbeta\r\ngamma\r\ndelta\r\n")
    await edit(tmp_path, one(old, new, "win.txt"))
    assert (tmp_path / "win.txt").read_bytes() == expected


async def test_c02_edit_bare_cr_mixed_endings(tmp_path: Path) -> None:
    put(tmp_path, "mixed.txt", b"head\r\nlog: 10%\r50%\r100%\nname = old\n")
    result = await edit(tmp_path, one("name = old", "name = new", "mixed.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in mixed.txt."
    assert (tmp_path / "mixed.txt").read_bytes() == b"head\r\nlog: 10%\r50%\r100%\nname = new\n"


@pytest.mark.parametrize(
    ("original", "old", "new", "expected"),
    [
        # LF lines inside a CRLF file, edited elsewhere
        (b"a\r\nb\nc\nd\r\n", "d", "D", b"a\r\nb\nc\nD\r\n"),
        # CRLF lines inside an LF file
        (b"a\nb\r\nc\r\nd\n", "a", "A", b"A\nb\r\nc\r\nd\n"),
        # old-Mac CR-only file
        (b"one\rtwo\rthree\r", "two", "2", b"one\r2\rthree\r"),
        # lone CR kept on the edited line itself
        (b"x = 1\rprogress\n", "x = 1", "x = 2", b"x = 2\rprogress\n"),
        # a multi-line edit in the LF part of a CRLF-first file: its new lines take the LF of
        # the line the edit starts on (Pi 1.6), the lines around it keep theirs
        (b"h\r\na\nb\nc\n", "a\nb", "A\nB", b"h\r\nA\nB\nc\n"),
        # CR CR LF is kept as it is
        (b"a\r\r\nb\r\n", "b", "B", b"a\r\r\nB\r\n"),
    ],
)
async def test_c02_kind_untouched_line_endings(
    tmp_path: Path,
    original: bytes,
    old: str,
    new: str,
    expected: bytes,
    require_program: Callable[[str], str],
) -> None:
    put(tmp_path, "m.txt", original)
    result = await edit(tmp_path, one(old, new, "m.txt"))
    assert (tmp_path / "m.txt").read_bytes() == expected
    assert_patch_applies(tmp_path, original, result, "m.txt", require_program)


async def test_c03_edit_bom_crlf_accents(tmp_path: Path) -> None:
    put(
        tmp_path,
        "Mod.vb",
        b"\xef\xbb\xbfModule F\xc5\x91modul\r\n    ' \xc3\x81llapot: k\xc3\xa9sz \xe2\x80\x93 "
        b"ellen\xc5\x91rizve\r\n    Dim count = 1\r\nEnd Module\r\n",
    )
    params = {
        "path": "Mod.vb",
        "edits": [
            {"oldText": "Module Főmodul", "newText": "Module Segéd"},
            {"oldText": "Dim count = 1", "newText": "Dim count = 2"},
        ],
    }
    assert text(await edit(tmp_path, params)) == "Successfully replaced 2 block(s) in Mod.vb."
    assert (tmp_path / "Mod.vb").read_bytes() == (
        b"\xef\xbb\xbfModule Seg\xc3\xa9d\r\n    ' \xc3\x81llapot: k\xc3\xa9sz \xe2\x80\x93 "
        b"ellen\xc5\x91rizve\r\n    Dim count = 2\r\nEnd Module\r\n"
    )


@pytest.mark.parametrize(
    ("original", "old", "new", "expected"),
    [
        # BOM only, no line break at all
        (b"\xef\xbb\xbfabc", "abc", "xyz", b"\xef\xbb\xbfxyz"),
        # BOM with LF endings, first line edited
        (b"\xef\xbb\xbfone\ntwo\n", "one\n", "ONE\n", b"\xef\xbb\xbfONE\ntwo\n"),
        # a U+FEFF that is not at the start is content and stays
        (b"a\xef\xbb\xbfb\nc\n", "c", "C", b"a\xef\xbb\xbfb\nC\n"),
    ],
)
async def test_c03_kind_bom_members(
    tmp_path: Path, original: bytes, old: str, new: str, expected: bytes
) -> None:
    put(tmp_path, "b.txt", original)
    await edit(tmp_path, one(old, new, "b.txt"))
    assert (tmp_path / "b.txt").read_bytes() == expected


async def test_c05_read_edit_utf16_bom(tmp_path: Path) -> None:
    put(
        tmp_path,
        "notes.txt",
        b"\xff\xfeh\x00e\x00l\x00l\x00o\x00\r\x00\n\x00w\x00\xf6\x00r\x00l\x00d\x00\r\x00\n\x00",
    )
    result = await edit(tmp_path, one("hello", "HELLO", "notes.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in notes.txt."
    assert (tmp_path / "notes.txt").read_bytes() == (
        b"\xff\xfeH\x00E\x00L\x00L\x00O\x00\r\x00\n\x00w\x00\xf6\x00r\x00l\x00d\x00\r\x00\n\x00"
    )


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-32-le", b"\xff\xfe\x00\x00"),
        ("utf-32-be", b"\x00\x00\xfe\xff"),
    ],
)
async def test_c05_kind_unicode_with_bom_round_trips(
    tmp_path: Path, encoding: str, bom: bytes
) -> None:
    original = "naïve\r\nwörld 😀\r\nend\r\n"
    put(tmp_path, "u.txt", bom + original.encode(encoding))
    params = {"path": "u.txt", "edits": [{"oldText": "wörld 😀\n", "newText": "WÖRLD ✓\nnew\n"}]}
    assert text(await edit(tmp_path, params)) == "Successfully replaced 1 block(s) in u.txt."
    expected = "naïve\r\nWÖRLD ✓\r\nnew\r\nend\r\n"
    assert (tmp_path / "u.txt").read_bytes() == bom + expected.encode(encoding)


@pytest.mark.parametrize(
    ("original", "old", "new", "expected"),
    [
        # Latin-1 / Windows-1252: bytes outside the edit stay as they are
        (b"caf\xe9 cr\xe8me\nna\xefve\n", "na\xefve", "NA\xcfVE", b"caf\xe9 cr\xe8me\nNA\xcfVE\n"),
        (b"\x93quoted\x94 \x80 5\nx\n", "x", "€ y", b"\x93quoted\x94 \x80 5\n\x80 y\n"),
        # ISO-8859-1 with a byte Windows-1252 leaves undefined (0x81)
        (b"a\x81b\nc\xe9\n", "c\xe9", "C\xc9", b"a\x81b\nC\xc9\n"),
    ],
)
async def test_c05_kind_legacy_single_byte_round_trips(
    tmp_path: Path, original: bytes, old: str, new: str, expected: bytes
) -> None:
    put(tmp_path, "l.txt", original)
    assert (
        text(await edit(tmp_path, one(old, new, "l.txt")))
        == "Successfully replaced 1 block(s) in l.txt."
    )
    assert (tmp_path / "l.txt").read_bytes() == expected


async def test_c05_kind_character_the_encoding_cannot_hold_is_refused(tmp_path: Path) -> None:
    put(tmp_path, "l.txt", b"caf\xe9\n")
    assert await edit_error(tmp_path, one("caf\xe9", "咖啡 😀", "l.txt")) == (
        "Could not edit file: l.txt. The file is encoded as Windows-1252, which cannot represent "
        "U+5496 '咖', U+5561 '啡' from the new text; nothing was written."
    )
    assert (tmp_path / "l.txt").read_bytes() == b"caf\xe9\n"


async def test_c05_kind_invalid_utf16_is_refused(tmp_path: Path) -> None:
    put(tmp_path, "bad.txt", b"\xff\xfeh\x00i\x00\n")  # odd length: a cut UTF-16 file
    assert await edit_error(tmp_path, one("hi", "HI", "bad.txt")) == (
        "Could not edit file: bad.txt. It is not valid UTF-16LE text, so it cannot be edited "
        "without changing bytes it does not touch."
    )
    assert (tmp_path / "bad.txt").read_bytes() == b"\xff\xfeh\x00i\x00\n"


@pytest.mark.parametrize(
    ("data", "description"),
    [
        (
            b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 8,
            "2.0KB, ZIP archive (also docx/xlsx/odt/jar)",
        ),
        (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 40, "48B, ELF executable"),
        (b"abc\x00def\n", "8B"),
    ],
)
async def test_binary_files_are_refused(tmp_path: Path, data: bytes, description: str) -> None:
    put(tmp_path, "bin.dat", data)
    assert await edit_error(tmp_path, one("abc", "x", "bin.dat")) == (
        f"Could not edit file: bin.dat. It is a binary file ({description}), not text; edit "
        "only changes text files."
    )
    assert (tmp_path / "bin.dat").read_bytes() == data


async def test_c06_edit_tabs_vs_spaces(tmp_path: Path) -> None:
    original = (
        b"package main\n\nfunc run(ok bool) int {\n\tif ok {\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
    )
    put(tmp_path, "main.go", original)
    spaces = one(
        "    if ok {\n        return 1\n    }", "    if ok {\n        return 2\n    }", "main.go"
    )
    assert await edit_error(tmp_path, spaces) == (
        NOT_FOUND.format(path="main.go")
        + "\nFile starts with:\n  1: package main\n  2: \n  3: func run(ok bool) int {\n"
        "  4: \tif ok {\n  5: \t\treturn 1"
    )
    assert (tmp_path / "main.go").read_bytes() == original
    tabs = one("\tif ok {\n\t\treturn 1\n\t}", "\tif ok {\n\t\treturn 2\n\t}", "main.go")
    assert text(await edit(tmp_path, tabs)) == "Successfully replaced 1 block(s) in main.go."
    assert (tmp_path / "main.go").read_bytes() == original.replace(b"return 1", b"return 2")


async def test_c06_kind_leading_whitespace_is_never_fuzzy(tmp_path: Path) -> None:
    original = b"def f():\n    if x:\n        return 1\n"
    put(tmp_path, "f.py", original)
    # a tab where the file has spaces, and two spaces where it has four: both not found
    assert (await edit_error(tmp_path, one("\tif x:\n\t\treturn 1", "y", "f.py"))).startswith(
        NOT_FOUND.format(path="f.py") + "\n"
    )
    message = await edit_error(tmp_path, one("  if x:\n    return 1", "y", "f.py"))
    assert message == (
        NOT_FOUND.format(path="f.py")
        + "\nFile starts with:\n  1: def f():\n  2:     if x:\n  3:         return 1\n  4: "
    )
    assert (tmp_path / "f.py").read_bytes() == original


async def test_c07_edit_fuzzy_preserves_untouched_lines(
    tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    original = (
        b'const greeting = "Hello, World!";   \n// This comment has \xe2\x80\x9csmart quotes\xe2\x80\x9d'
        b' and an em dash \xe2\x80\x94 for style\nconst name = "Alice";\n// Non-breaking\xc2\xa0space'
        b' here\nconst result = "done";\n'
    )
    put(tmp_path, "test.ts", original)
    result = await edit(tmp_path, one("const name = “Alice”;", 'const name = "Bob";', "test.ts"))
    assert text(result) == "Successfully replaced 1 block(s) in test.ts."
    assert (tmp_path / "test.ts").read_bytes() == original.replace(b'"Alice"', b'"Bob"')
    assert result.details["firstChangedLine"] == 3
    assert_patch_applies(tmp_path, original, result, "test.ts", require_program)


@pytest.mark.parametrize(
    ("original", "old", "new", "expected"),
    [
        # rest of the touched line keeps its curly quotes and trailing spaces
        ("a = ‘x’; b = “y”  \n", "a = 'x';", "a = 1;", "a = 1; b = “y”  \n"),
        # em dash and NBSP elsewhere on the line stay
        ("x — y\u00a0z – w\n", "y z - w", "Y", "x — Y\n"),
        # full-width text around a fuzzy match stays full-width
        ("ＡＢＣ def ＧＨＩ\n", "def GHI", "DEF", "ＡＢＣ DEF\n"),
        # trailing whitespace of untouched lines of a multi-line fuzzy edit's neighbours stays
        ("keep  \n‘a’\n‘b’\nkeep  \n", "'a'\n'b'", "A\nB", "keep  \nA\nB\nkeep  \n"),
    ],
)
async def test_c07_kind_fuzzy_rewrites_only_what_it_matched(
    tmp_path: Path,
    original: str,
    old: str,
    new: str,
    expected: str,
    require_program: Callable[[str], str],
) -> None:
    put(tmp_path, "z.txt", original.encode())
    result = await edit(tmp_path, one(old, new, "z.txt"))
    assert (tmp_path / "z.txt").read_text() == expected
    assert_patch_applies(tmp_path, original.encode(), result, "z.txt", require_program)


async def test_c10_edit_overlapping_occurrences_ambiguous(tmp_path: Path) -> None:
    put(tmp_path, "edit.txt", b"foo\nfoo\nfoo\n")
    assert await edit_error(tmp_path, one("foo\nfoo\n", "replacement\n", "edit.txt")) == (
        "Found 2 occurrences of the text in edit.txt. The text must be unique. Please provide "
        "more context to make it unique."
    )
    assert snapshot(tmp_path) == {"edit.txt": b"foo\nfoo\nfoo\n"}


@pytest.mark.parametrize(
    ("original", "old", "count"),
    [
        (b"aaaa", "aa", 3),
        (b"abab ab", "abab", 1),  # unique: only one start
        (b"ababab", "abab", 2),
        (b"x\r\nx\r\nx\r\n", "x\nx", 2),  # overlapping across CRLF
        ("‘a’‘a’‘a’".encode(), "'a''a'", 2),  # fuzzy occurrences overlap too
    ],
)
async def test_c10_kind_overlapping_occurrences_count(
    tmp_path: Path, original: bytes, old: str, count: int
) -> None:
    put(tmp_path, "o.txt", original)
    if count == 1:
        await edit(tmp_path, one(old, "Z", "o.txt"))
        assert (tmp_path / "o.txt").read_bytes() == b"Z ab"
        return
    assert await edit_error(tmp_path, one(old, "Z", "o.txt")) == (
        f"Found {count} occurrences of the text in o.txt. The text must be unique. Please "
        "provide more context to make it unique."
    )
    assert (tmp_path / "o.txt").read_bytes() == original


async def test_c11_edit_overlapping_edits_in_one_call(tmp_path: Path) -> None:
    put(tmp_path, "v.txt", b"a = 1\nb = 2\nc = 3\n")
    overlapping = {
        "path": "v.txt",
        "edits": [
            {"oldText": "a = 1\nb = 2", "newText": "A"},
            {"oldText": "b = 2\nc = 3", "newText": "C"},
        ],
    }
    assert await edit_error(tmp_path, overlapping) == (
        "edits[0] and edits[1] overlap in v.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    assert (tmp_path / "v.txt").read_bytes() == b"a = 1\nb = 2\nc = 3\n"
    touching = {
        "path": "v.txt",
        "edits": [
            {"oldText": "b = 2", "newText": "b = 20"},
            {"oldText": "a = 1\n", "newText": "a = 10\n"},
        ],
    }
    assert text(await edit(tmp_path, touching)) == "Successfully replaced 2 block(s) in v.txt."
    assert (tmp_path / "v.txt").read_bytes() == b"a = 10\nb = 20\nc = 3\n"


async def test_c11_kind_nested_and_fuzzy_overlaps(tmp_path: Path) -> None:
    put(tmp_path, "v.txt", "x = ‘1’\ny = 2\n".encode())
    nested = {
        "path": "v.txt",
        "edits": [{"oldText": "y = 2", "newText": "Y"}, {"oldText": "= 2", "newText": "Z"}],
    }
    assert await edit_error(tmp_path, nested) == (
        "edits[0] and edits[1] overlap in v.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    fuzzy = {
        "path": "v.txt",
        "edits": [{"oldText": "'1'\ny", "newText": "A"}, {"oldText": "x = '1'", "newText": "B"}],
    }
    assert await edit_error(tmp_path, fuzzy) == (
        "edits[1] and edits[0] overlap in v.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    assert (tmp_path / "v.txt").read_text() == "x = ‘1’\ny = 2\n"


async def test_c13_parallel_edits_same_file(tmp_path: Path) -> None:
    original = "".join(f"{i}\n" for i in range(1, 101))
    expected = original.replace("\n50\n", "\nFIFTY\n").replace("\n75\n", "\nSEVENTY-FIVE\n")
    tool = create_edit_tool_definition(str(tmp_path), LocalFileOperations())
    for _ in range(10):
        put(tmp_path, "nums.txt", original.encode())
        results: dict[str, str] = {}

        async def run(call_id: str, old: str, new: str, results: dict[str, str] = results) -> None:
            result = await tool.execute(call_id, one(old, new, "nums.txt"), None, None)
            results[call_id] = text(result)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, "t1", "\n50\n", "\nFIFTY\n")
            nursery.start_soon(run, "t2", "\n75\n", "\nSEVENTY-FIVE\n")
        assert results == {
            "t1": "Successfully replaced 1 block(s) in nums.txt.",
            "t2": "Successfully replaced 1 block(s) in nums.txt.",
        }
        assert (tmp_path / "nums.txt").read_text() == expected


async def test_200_concurrent_edits_of_one_file_all_land(tmp_path: Path) -> None:
    put(tmp_path, "many.txt", "".join(f"line {i}\n" for i in range(200)).encode())
    tool = create_edit_tool_definition(str(tmp_path), LocalFileOperations())
    texts: list[str] = []

    async def run(i: int) -> None:
        result = await tool.execute(
            f"c{i}", one(f"line {i}\n", f"LINE {i}\n", "many.txt"), None, None
        )
        texts.append(text(result))

    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(run, i)
    assert texts == ["Successfully replaced 1 block(s) in many.txt."] * 200
    assert (tmp_path / "many.txt").read_text() == "".join(f"LINE {i}\n" for i in range(200))


async def test_c14_args_stringified_edits_with_raw_control_chars(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"a\n")
    raw = '[{"oldText":"a","newText":"line one\nline\ttwo"}]'
    assert await call_through_loop(tmp_path, {"path": "f.txt", "edits": raw}) == (
        "Successfully replaced 1 block(s) in f.txt.",
        False,
    )
    assert (tmp_path / "f.txt").read_bytes() == b"line one\nline\ttwo\n"
    items = ['{"oldText":"two","newText":"2"}']
    assert await call_through_loop(tmp_path, {"path": "f.txt", "edits": items}) == (
        "Successfully replaced 1 block(s) in f.txt.",
        False,
    )
    assert (tmp_path / "f.txt").read_bytes() == b"line one\nline\t2\n"


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        ('{"oldText":"a","newText":"b"}', [{"oldText": "a", "newText": "b"}]),  # one object
        ('"[{\\"oldText\\":\\"a\\",\\"newText\\":\\"b\\"}]"', [{"oldText": "a", "newText": "b"}]),
        ('  [ {"oldText": "a\r\n", "newText": "b"} ]  ', [{"oldText": "a\r\n", "newText": "b"}]),
        (['{"oldText":"a","newText":"b","extra":1}'], [{"oldText": "a", "newText": "b"}]),
        (
            [{"oldText": "a", "newText": "b"}, "not json"],
            [{"oldText": "a", "newText": "b"}, "not json"],
        ),
    ],
)
def test_c14_kind_json_string_shapes(edits: Any, expected: Any) -> None:
    assert prepare_edit_arguments({"path": "f", "edits": edits}) == {"path": "f", "edits": expected}


async def test_c14_kind_unparseable_text_is_a_validation_error(tmp_path: Path) -> None:
    put(tmp_path, "f.txt", b"a\n")
    assert await call_through_loop(tmp_path, {"path": "f.txt", "edits": "[{oldText: a}]"}) == (
        'Validation failed for tool "edit":\n  - edits.0: expected object, got string\n\n'
        'Received arguments:\n{\n  "path": "f.txt",\n  "edits": "[{oldText: a}]"\n}',
        True,
    )
    assert (tmp_path / "f.txt").read_bytes() == b"a\n"


async def test_c27_write_edit_through_symlink(tmp_path: Path) -> None:
    put(tmp_path, "dotfiles/bashrc", b"export A=1\n")
    (tmp_path / ".bashrc").symlink_to("dotfiles/bashrc")
    result = await edit(tmp_path, one("export A=1", "export A=2", ".bashrc"))
    assert text(result) == "Successfully replaced 1 block(s) in .bashrc."
    assert (tmp_path / "dotfiles/bashrc").read_bytes() == b"export A=2\n"
    assert os.readlink(tmp_path / ".bashrc") == "dotfiles/bashrc"


async def test_c27_kind_link_chain_and_mode_are_kept(tmp_path: Path) -> None:
    target = put(tmp_path, "real/conf", b"k=1\n")
    target.chmod(0o640)
    (tmp_path / "mid").symlink_to("real/conf")
    (tmp_path / "top").symlink_to("mid")
    await edit(tmp_path, one("k=1", "k=2", "top"))
    assert target.read_bytes() == b"k=2\n"
    assert (os.readlink(tmp_path / "top"), os.readlink(tmp_path / "mid")) == ("mid", "real/conf")
    assert target.stat().st_mode & 0o777 == 0o640


# ---------------------------------------------------------------------------------------------
# Paths (port decision 9) and file-system errors
# ---------------------------------------------------------------------------------------------


async def test_paths_at_prefix_and_special_spaces(tmp_path: Path) -> None:
    put(tmp_path, "my file.txt", b"x\n")
    await edit(tmp_path, one("x", "y", "@my\u00a0file.txt"))
    assert (tmp_path / "my file.txt").read_bytes() == b"y\n"
    put(tmp_path, "at\u202fnoon.txt", b"x\n")  # an existing name with U+202F is used as given
    result = await edit(tmp_path, one("x", "z", "at\u202fnoon.txt"))
    assert text(result) == "Successfully replaced 1 block(s) in at\u202fnoon.txt."
    assert (tmp_path / "at\u202fnoon.txt").read_bytes() == b"z\n"


async def test_read_only_fallbacks_are_not_used_by_edit(tmp_path: Path) -> None:
    """Seed §十三: edit resolves as write does (resolveToCwd plus decision 9's exact name), not
    with read's NFD / curly-apostrophe fallbacks, so an edit and a write of one path always
    name the same file."""
    put(tmp_path, "it\u2019s.txt", b"x\n")
    put(tmp_path, unicodedata.normalize("NFD", "caf\u00e9.txt"), b"x\n")
    assert await edit_error(tmp_path, one("x", "y", "it's.txt")) == (
        "Could not edit file: it's.txt. Error code: ENOENT."
    )
    assert await edit_error(tmp_path, one("x", "y", "caf\u00e9.txt")) == (
        "Could not edit file: caf\u00e9.txt. Error code: ENOENT."
    )
    assert snapshot(tmp_path) == {
        "it\u2019s.txt": b"x\n",
        unicodedata.normalize("NFD", "caf\u00e9.txt"): b"x\n",
    }


async def test_directory_is_node_eisdir(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert await edit_error(tmp_path, one("a", "b", "d")) == (
        "EISDIR: illegal operation on a directory, read"
    )


async def test_write_failure_is_node_text_and_file_is_unchanged(tmp_path: Path) -> None:
    class Full(LocalFileOperations):
        async def write_bytes(self, path: str, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", path)

    put(tmp_path, "f.txt", b"a\n")
    assert await edit_error(tmp_path, one("a", "b"), Full()) == (
        f"ENOSPC: no space left on device, open '{tmp_path / 'f.txt'}'"
    )
    assert (tmp_path / "f.txt").read_bytes() == b"a\n"


# ---------------------------------------------------------------------------------------------
# Abort (spec §6, §10 row 22; scenario 169)
# ---------------------------------------------------------------------------------------------


class SlowWrite(LocalFileOperations):
    """Writes take ``delay`` seconds; ``writing`` is set when the first write starts."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.writing = trio.Event()
        self.log: list[str] = []

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        self.log.append("read")
        return await super().read_bytes(path, offset, length)

    async def write_bytes(self, path: str, data: bytes) -> None:
        self.log.append("write:start")
        self.writing.set()
        await trio.sleep(self.delay)
        await super().write_bytes(path, data)
        self.log.append("write:end")


async def test_scenario_169_aborted_edit_keeps_the_queue_until_the_write_lands(
    tmp_path: Path,
) -> None:
    put(tmp_path, "q.txt", b"alpha\nbeta\n")
    ops = SlowWrite(0.3)
    abort = Abort()
    outcomes: dict[str, tuple[str, bool]] = {}

    async def first() -> None:
        outcomes["first"] = await call_through_loop(
            tmp_path, one("alpha", "ALPHA", "q.txt"), ops, abort
        )

    async def second() -> None:
        outcomes["second"] = await call_through_loop(
            tmp_path, one("ALPHA\nbeta", "ALPHA\nBETA", "q.txt"), ops
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await ops.writing.wait()
        nursery.start_soon(second)
        abort.abort()
        await trio.sleep(0.1)
        assert ops.log == ["read", "write:start"]  # the second edit has not read yet
    assert outcomes == {
        "first": ("Operation aborted", True),
        "second": ("Successfully replaced 1 block(s) in q.txt.", False),
    }
    assert ops.log == ["read", "write:start", "write:end", "read", "write:start", "write:end"]
    assert (tmp_path / "q.txt").read_bytes() == b"ALPHA\nBETA\n"


async def test_abort_before_the_write_writes_nothing(tmp_path: Path) -> None:
    put(tmp_path, "q.txt", b"alpha\n")
    abort = Abort()
    abort.abort()
    assert await call_through_loop(tmp_path, one("alpha", "ALPHA", "q.txt"), abort=abort) == (
        "Operation aborted",
        True,
    )
    assert (tmp_path / "q.txt").read_bytes() == b"alpha\n"


# ---------------------------------------------------------------------------------------------
# The patch applies with real tools
# ---------------------------------------------------------------------------------------------


def _lf_view(data: bytes) -> bytes:
    """The UTF-8 file as Pi 1.6's diff sees it: no BOM, every CRLF and lone CR an LF."""
    text = data.decode("utf-8").removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").encode()


def assert_patch_applies(
    root: Path,
    original: bytes,
    result: AgentToolResult,
    name: str,
    require_program: Callable[[str], str],
) -> None:
    """``details.patch`` (Pi 1.6's: of the LF views, without BOM) turns the LF view of
    ``original`` into the LF view of the edited file, with GNU ``patch -p0`` and with
    ``git apply``."""
    patch = result.details["patch"].encode()
    edited = _lf_view((root / name).read_bytes())
    for tool in ("patch", "git"):
        require_program(tool)
        work = root / f"_apply_{tool}"
        work.mkdir()
        (work / name).write_bytes(_lf_view(original))
        (work / "change.patch").write_bytes(patch)
        command = (
            ["patch", "-p0", "--quiet", "--batch", "-i", "change.patch"]
            if tool == "patch"
            else ["git", "apply", "-p0", "--unsafe-paths", "--whitespace=nowarn", "change.patch"]
        )
        done = subprocess.run(command, cwd=work, capture_output=True, check=False)
        assert done.returncode == 0, (tool, done.stdout, done.stderr, patch)
        assert (work / name).read_bytes() == edited, tool


async def test_patch_applies_for_multi_hunk_and_no_final_newline(
    tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    original = "".join(f"row {i}\r\n" for i in range(1, 40)).encode() + b"last"
    put(tmp_path, "p.txt", original)
    params = {
        "path": "p.txt",
        "edits": [
            {"oldText": "row 2\n", "newText": "ROW 2\nextra\n"},
            {"oldText": "row 30\n", "newText": ""},
            {"oldText": "last", "newText": "LAST\n"},
        ],
    }
    result = await edit(tmp_path, params)
    assert result.details["patch"].count("@@ -") == 3
    assert_patch_applies(tmp_path, original, result, "p.txt", require_program)


async def test_local_access_is_nodes_fs_access(tmp_path: Path) -> None:
    ops = LocalFileOperations()
    put(tmp_path, "ok.txt", b"x")
    await ops.access(str(tmp_path / "ok.txt"), os.R_OK | os.W_OK)
    with pytest.raises(FileNotFoundError) as caught:
        await ops.access(str(tmp_path / "missing.txt"), os.R_OK)
    assert caught.value.errno == errno.ENOENT
    if os.geteuid() != 0:
        (tmp_path / "ok.txt").chmod(0o444)
        with pytest.raises(PermissionError) as denied:
            await ops.access(str(tmp_path / "ok.txt"), os.R_OK | os.W_OK)
        assert denied.value.errno == errno.EACCES
