"""The ``grep`` tool (spec §7.5, §8.12 #151–155; conformance ``grep-*``; case c26 and the rest
of its kind, grep/long-line)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files.local import LocalFileOperations, find_rg
from pi_builtin_tools.search.grep import create_grep_tool_definition
from pi_core._errors import ToolError
from pi_core._wire.messages import AgentToolResult
from support import make, text

NOTICE_LONG = "Some lines truncated to 500 chars. Use read tool to see full lines"


async def grep(cwd: Path, ops: Any = None, **params: Any) -> AgentToolResult:
    tool = create_grep_tool_definition(str(cwd), ops or LocalFileOperations())
    return await tool.execute("c1", params, None, None)


async def grep_text(cwd: Path, **params: Any) -> str:
    return text(await grep(cwd, **params))


async def grep_error(cwd: Path, **params: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await grep(cwd, **params)
    return str(caught.value)


def test_definition_is_pis() -> None:
    tool = create_grep_tool_definition("/tmp", LocalFileOperations())
    assert (tool.name, tool.label) == ("grep", "grep")
    assert tool.description == (
        "Search file contents for a pattern. Returns matching lines with file paths and line "
        "numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is "
        "hit first). Long lines are truncated to 500 chars."
    )
    assert tool.prompt_snippet == "Search file contents for patterns (respects .gitignore)"
    assert tool.parameters["required"] == ["pattern"]
    assert list(tool.parameters["properties"]) == [
        "pattern",
        "path",
        "glob",
        "ignoreCase",
        "literal",
        "context",
        "limit",
    ]
    assert tool.parameters["properties"]["glob"] == {
        "type": "string",
        "description": (
            "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', "
            "e.g. '*.ts', it matches file names at any depth"
        ),
    }
    assert tool.parameters["properties"]["context"] == {
        "type": "number",
        "description": "Number of lines to show before and after each match (default: 0)",
    }


# --- conformance cases ------------------------------------------------------------------------


async def test_conformance_grep_single_file(tmp_path: Path) -> None:
    make(tmp_path, {"example.txt": "first line\nmatch line\nlast line\n"})
    result = await grep(tmp_path, pattern="match", path="example.txt")
    assert text(result) == "example.txt:2: match line"
    assert result.details is None


async def test_conformance_grep_context_and_limit(tmp_path: Path) -> None:
    make(tmp_path, {"context.txt": "before\nmatch one\nafter\nmiddle\nmatch two\nafter two\n"})
    result = await grep(tmp_path, pattern="match", path="context.txt", limit=1, context=1)
    assert text(result) == (
        "context.txt-1- before\ncontext.txt:2: match one\ncontext.txt-3- after\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 1}


async def test_conformance_grep_errors(tmp_path: Path) -> None:
    make(tmp_path, {"a.txt": "x\n"})
    assert await grep_error(tmp_path, pattern="x", path="nope") == (
        f"Path not found: {tmp_path}/nope"
    )
    assert await grep_error(tmp_path, pattern="(") == rg_says(tmp_path, "(")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"pattern": "a\x00b"}, 'Invalid pattern "a\\x00b": a pattern cannot contain a NUL byte.'),
        (
            {"pattern": "a\ud800", "literal": True},
            'Invalid pattern "a\\ud800": a pattern cannot contain a lone surrogate '
            "(U+D800 to U+DFFF), which cannot be passed to a process.",
        ),
        (
            {"pattern": "a\udcff"},
            'Invalid pattern "a\\udcff": a pattern cannot contain a lone surrogate '
            "(U+D800 to U+DFFF), which cannot be passed to a process.",
        ),
        (
            {"pattern": "x", "glob": "*\x00"},
            'Invalid glob "*\\x00": a glob cannot contain a NUL byte.',
        ),
        (
            {"pattern": "x", "glob": "\ud800*"},
            'Invalid glob "\\ud800*": a glob cannot contain a lone surrogate '
            "(U+D800 to U+DFFF), which cannot be passed to a process.",
        ),
    ],
)
async def test_a_pattern_or_glob_ripgrep_cannot_take_is_a_clear_error(
    tmp_path: Path, params: dict[str, Any], message: str
) -> None:
    make(tmp_path, {"a.txt": "x\n"})
    assert await grep_error(tmp_path, **params) == message


async def test_conformance_grep_glob_directory(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "docs/guide.md": "install steps\n",
            "docs/notes.txt": "install notes\n",
            "src/main.py": "install()\n",
        },
    )
    assert await grep_text(tmp_path, pattern="install", path="docs", glob="*.md") == (
        "guide.md:1: install steps"
    )


async def test_glob_is_relative_to_the_search_path_without_leading_dot_slash(
    tmp_path: Path,
) -> None:
    # Pi 1.6 drops leading "./" (after a "!" too); ripgrep roots the glob at the search path
    make(tmp_path, {"src/a.ts": "hit\n", "pkg/src/b.ts": "hit\n", "c.txt": "hit\n"})
    assert await grep_text(tmp_path, pattern="hit", glob="./src/*.ts") == "src/a.ts:1: hit"
    assert await grep_text(tmp_path, pattern="hit", glob="src/*.ts") == "src/a.ts:1: hit"
    assert await grep_text(tmp_path, pattern="hit", glob="!././*.ts") == "c.txt:1: hit"
    assert await grep_text(tmp_path, pattern="hit", path="pkg", glob="./src/*") == (
        "src/b.ts:1: hit"
    )


async def test_conformance_grep_literal_ignore_case(tmp_path: Path) -> None:
    make(tmp_path, {"dots.txt": "a.b\naxb\nA.B\n"})
    text = await grep_text(tmp_path, pattern="a.b", path="dots.txt", literal=True, ignoreCase=True)
    assert text == "dots.txt:1: a.b\ndots.txt:3: A.B"


async def test_conformance_grep_long_line(tmp_path: Path) -> None:
    make(tmp_path, {"long.txt": "needle " + "x" * 593 + "\nshort needle\n"})
    result = await grep(tmp_path, pattern="needle", path="long.txt")
    assert text(result) == (
        "long.txt:1: needle " + "x" * 493 + "... [truncated]\n"
        "long.txt:2: short needle\n\n"
        f"[{NOTICE_LONG}]"
    )
    assert result.details == {"linesTruncated": True}


async def test_conformance_grep_no_match_and_flag_pattern(tmp_path: Path) -> None:
    make(tmp_path, {"a.txt": "hello\n"})
    result = await grep(tmp_path, pattern="absent-word")
    assert text(result) == "No matches found"
    assert result.details is None
    assert await grep_text(tmp_path, pattern="--pre=touch") == "No matches found"


# --- §8.12 scenarios --------------------------------------------------------------------------


async def test_scenario_153_flag_like_pattern_never_runs_a_preprocessor(tmp_path: Path) -> None:
    script = tmp_path / "pre.sh"
    script.write_text(f'#!/bin/sh\ntouch {tmp_path}/ran\ncat "$1"\n')
    script.chmod(0o755)
    make(tmp_path, {"a.txt": "hello\n"})
    assert await grep_text(tmp_path, pattern=f"--pre={script}") == "No matches found"
    assert not (tmp_path / "ran").exists()
    # ... and the same text in a file is found as text.
    make(tmp_path, {"b.txt": "use --pre=x here\n"})
    assert await grep_text(tmp_path, pattern="--pre=x") == "b.txt:1: use --pre=x here"


async def test_scenario_155_invalid_regex_other_forms(tmp_path: Path) -> None:
    make(tmp_path, {"a.txt": "x\n"})
    assert await grep_error(tmp_path, pattern="a{2,1}") == rg_says(tmp_path, "a{2,1}")
    assert "invalid repetition count range" in rg_says(tmp_path, "a{2,1}")
    glob_error = await grep_error(tmp_path, pattern="x", glob="[")
    assert glob_error.removeprefix("rg: ") == (
        "error parsing glob '[': unclosed character class; missing ']'"
    )


# --- case c26 and its kind: grep/long-line -------------------------------------------------------


async def test_c26_grep_match_in_very_long_line(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "src/app.js": "function needleFn() {}\n",
            "dist/app.min.js": "var a='"
            + "x" * 3000
            + "';function needleFn(){}var b='"
            + "y" * 3000
            + "';\n",
        },
    )
    result = await grep(tmp_path, pattern="needleFn", path=".")
    assert text(result) == (
        "dist/app.min.js:1: var a='" + "x" * 493 + "... [truncated]\n"
        "src/app.js:1: function needleFn() {}\n\n"
        f"[{NOTICE_LONG}]"
    )
    assert result.is_error is None
    assert result.details == {"linesTruncated": True}


async def test_long_line_cut_counts_code_points_not_utf16_units(tmp_path: Path) -> None:
    # Port decision 3: 500 characters, whether they take 1, 2 or 4 UTF-8 bytes.
    make(tmp_path, {"u.txt": "needle " + "é" * 600 + "\n", "e.txt": "needle " + "😀" * 600 + "\n"})
    assert await grep_text(tmp_path, pattern="needle", path="u.txt") == (
        "u.txt:1: needle " + "é" * 493 + f"... [truncated]\n\n[{NOTICE_LONG}]"
    )
    assert await grep_text(tmp_path, pattern="needle", path="e.txt") == (
        "e.txt:1: needle " + "😀" * 493 + f"... [truncated]\n\n[{NOTICE_LONG}]"
    )


async def test_long_context_lines_are_cut_too(tmp_path: Path) -> None:
    make(tmp_path, {"c.txt": "a" * 600 + "\nneedle\n"})
    result = await grep(tmp_path, pattern="needle", path="c.txt", context=1)
    assert text(result) == (
        "c.txt-1- " + "a" * 500 + f"... [truncated]\nc.txt:2: needle\n\n[{NOTICE_LONG}]"
    )
    assert result.details == {"linesTruncated": True}


async def test_exactly_500_characters_is_not_cut(tmp_path: Path) -> None:
    line = "needle" + "x" * 494
    make(tmp_path, {"f.txt": line + "\n"})
    result = await grep(tmp_path, pattern="needle", path="f.txt")
    assert text(result) == f"f.txt:1: {line}"
    assert result.details is None


async def test_long_lines_past_50kb_notices_in_pis_order(tmp_path: Path) -> None:
    lines = [f"needle {i:04d} " + "z" * 600 for i in range(120)]
    make(tmp_path, {"b.txt": "\n".join(lines) + "\n"})
    result = await grep(tmp_path, pattern="needle", path="b.txt", limit=110)
    shown = [f"b.txt:{i + 1}: " + lines[i][:500] + "... [truncated]" for i in range(110)]
    each = len(shown[0].encode())  # every shown line has the same size (524 bytes)
    fit = (51200 + 1) // (each + 1)
    assert text(result) == (
        "\n".join(shown[:fit])
        + "\n\n[110 matches limit reached. Use limit=220 for more, or refine pattern. "
        f"50.0KB limit reached. {NOTICE_LONG}]"
    )
    assert list(result.details) == ["matchLimitReached", "truncation", "linesTruncated"]
    assert result.details["truncation"]["outputLines"] == fit
    assert result.details["truncation"]["totalLines"] == 110
    assert result.details["truncation"]["maxLines"] == 2**53 - 1


async def test_only_the_line_terminator_is_stripped(tmp_path: Path) -> None:
    """Pi 1.6: ``\\r\\n`` and a final ``\\r`` go, a lone CR inside a line stays."""
    make(tmp_path, {"w.txt": "one\r\nmatch\r\nthree\r\n", "m.txt": "x\rmatch\r\n"})
    assert await grep_text(tmp_path, pattern="match", path="w.txt") == "w.txt:2: match"
    assert await grep_text(tmp_path, pattern="match", path="w.txt", context=1) == (
        "w.txt-1- one\nw.txt:2: match\nw.txt-3- three"
    )
    assert await grep_text(tmp_path, pattern="match", path="m.txt") == "m.txt:1: x\rmatch"
    assert await grep_text(tmp_path, pattern="match", path="m.txt", context=1) == (
        "m.txt:1: x\rmatch"
    )


# --- context, limits, order ---------------------------------------------------------------------


async def test_context_windows_merge_as_rg_prints_them(tmp_path: Path) -> None:
    """Pi 1.6 (rg --context): no line twice, matches inside a window are match lines, and a
    final newline starts no further line."""
    make(tmp_path, {"f.txt": "a\nmatch 1\nb\nmatch 2\nc\nmatch 3\n"})
    assert await grep_text(tmp_path, pattern="match", path="f.txt", context=1) == (
        "f.txt-1- a\nf.txt:2: match 1\nf.txt-3- b\nf.txt:4: match 2\nf.txt-5- c\nf.txt:6: match 3"
    )
    assert await grep_text(tmp_path, pattern="match", path="f.txt", context=3) == (
        "f.txt-1- a\nf.txt:2: match 1\nf.txt-3- b\nf.txt:4: match 2\nf.txt-5- c\nf.txt:6: match 3"
    )
    assert await grep_text(tmp_path, pattern="match 3", context=2) == (
        "f.txt-4- match 2\nf.txt-5- c\nf.txt:6: match 3"
    )


async def test_limit_proof_inside_the_trailing_context_is_a_context_line(tmp_path: Path) -> None:
    """r16-grep-limit-semantics: the match after the limit is shown as context."""
    make(tmp_path, {"g.txt": "hit one\nx\nhit two\ny\n"})
    result = await grep(tmp_path, pattern="hit", path="g.txt", limit=1, context=2)
    assert text(result) == (
        "g.txt:1: hit one\ng.txt-2- x\ng.txt-3- hit two\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"context": 1e12}, "context must be an integer from 0 to 1000, got 1000000000000"),
        ({"context": float("inf")}, "context must be an integer from 0 to 1000, got Infinity"),
    ],
)
async def test_nonsense_limit_or_context_is_an_error(
    tmp_path: Path, args: dict[str, float], message: str
) -> None:
    """The reference reprints the whole file per match for context 1e12: refused."""
    make(tmp_path, {"f.txt": "needle a\nneedle b\n"})
    assert await grep_error(tmp_path, pattern="needle", path="f.txt", **args) == message


@pytest.mark.parametrize("args", [{"limit": 0}, {"limit": -1}, {"limit": 1, "context": -3}])
async def test_limit_and_context_below_range_are_clamped(
    tmp_path: Path, args: dict[str, int]
) -> None:
    """Spec §7.5 step 3: ``context = max(context, 0)``, ``limit = max(1, limit)``."""
    make(tmp_path, {"f.txt": "needle a\nneedle b\n"})
    assert text(await grep(tmp_path, pattern="needle", path="f.txt", **args)) == (
        "f.txt:1: needle a\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )


async def test_context_and_limit_as_whole_floats(tmp_path: Path) -> None:
    make(tmp_path, {"f.txt": "x\nneedle a\ny\n"})
    result = await grep(tmp_path, pattern="needle", path="f.txt", limit=1.0, context=1.0)
    assert text(result) == "f.txt-1- x\nf.txt:2: needle a\nf.txt-3- y"


async def test_fractional_limit_and_context_are_floored(tmp_path: Path) -> None:
    """r16-grep-limit-semantics: ``floor`` as Pi 1.6 does."""
    make(tmp_path, {"f.txt": "x\nneedle a\ny\nneedle b\n"})
    result = await grep(tmp_path, pattern="needle", path="f.txt", limit=1.5, context=1.7)
    assert text(result) == (
        "f.txt-1- x\nf.txt:2: needle a\nf.txt-3- y\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )


@pytest.mark.parametrize("limit", [2**63 - 1, 1e19, 1.8446744073709552e19, 1e20, 1e300])
@pytest.mark.parametrize("where", [".", "f.txt"])
async def test_a_limit_beyond_any_count_is_no_limit(
    tmp_path: Path, limit: float, where: str
) -> None:
    """As in Pi 1.6 (a model's ``1e20``): every match, with context; not Python's ``islice``
    range error, nor ripgrep's ``--max-count`` overflow."""
    make(tmp_path, {"f.txt": "abc\nxyz\nbanana\n"})
    result = await grep(tmp_path, pattern="a", path=where, limit=limit)
    assert text(result) == "f.txt:1: abc\nf.txt:3: banana"
    result = await grep(tmp_path, pattern="a", path=where, limit=limit, context=2)
    assert text(result) == "f.txt:1: abc\nf.txt-2- xyz\nf.txt:3: banana"


async def test_a_huge_limit_on_a_large_file(tmp_path: Path) -> None:
    """The windowed search of a large file (``WINDOWED_MIN_BYTES``) takes the bound too."""
    line = b"filler text without the word\n"
    body = line * (33 * 1024 * 1024 // len(line))
    (tmp_path / "big.txt").write_bytes(b"needle one\n" + body + b"needle two\n")
    result = await grep(tmp_path, pattern="needle", path="big.txt", literal=True, limit=1e20)
    last = 2 + len(body) // len(line)
    assert text(result) == f"big.txt:1: needle one\nbig.txt:{last}: needle two"


async def test_limit_reached_across_files_in_path_order(tmp_path: Path) -> None:
    make(tmp_path, {f"d{i}/f.txt": "hit\nhit\n" for i in range(5)})
    result = await grep(tmp_path, pattern="hit", limit=3)
    assert text(result) == (
        "d0/f.txt:1: hit\nd0/f.txt:2: hit\nd1/f.txt:1: hit\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )


async def test_exactly_limit_matches_give_no_notice(tmp_path: Path) -> None:
    """Pi 1.6: only one more match proves that the limit cut results off."""
    make(tmp_path, {"f.txt": "hit\nhit\n"})
    result = await grep(tmp_path, pattern="hit", limit=2)
    assert text(result) == "f.txt:1: hit\nf.txt:2: hit"
    assert result.details is None


async def test_files_in_path_order(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "v.txt": "match\n",
            "sub/.h/x.txt": "match\n",
            ".env": "SECRET=match\n",
            "a/b.txt": "match\n",
        },
    )
    assert await grep_text(tmp_path, pattern="match") == (
        ".env:1: SECRET=match\na/b.txt:1: match\nsub/.h/x.txt:1: match\nv.txt:1: match"
    )


async def test_gitignore_honoured_inside_a_git_repository_only(tmp_path: Path) -> None:
    files = {"repo/.gitignore": "skip.txt\n", "repo/skip.txt": "zq7\n", "repo/keep.txt": "zq7\n"}
    make(tmp_path, files)
    assert await grep_text(tmp_path, pattern="zq7", path="repo") == (
        "keep.txt:1: zq7\nskip.txt:1: zq7"
    )
    await trio.run_process(["git", "init", "-q", str(tmp_path / "repo")])
    assert await grep_text(tmp_path, pattern="zq7", path="repo") == "keep.txt:1: zq7"
    # An explicit file is searched even when ignored.
    assert await grep_text(tmp_path, pattern="zq7", path="repo/skip.txt") == "skip.txt:1: zq7"


async def test_hidden_git_directory_is_searched_as_pi_does(tmp_path: Path) -> None:
    # Pi runs rg --hidden, which does not skip .git/ (fd does not either).
    make(tmp_path, {"a.txt": "zq7\n"})
    await trio.run_process(["git", "init", "-q", str(tmp_path)])
    (tmp_path / ".git" / "description").write_text("zq7 repo\n")
    assert await grep_text(tmp_path, pattern="zq7") == ".git/description:1: zq7 repo\na.txt:1: zq7"


async def test_regex_and_ignore_case(tmp_path: Path) -> None:
    make(tmp_path, {"r.txt": "foo123\nfoo\nFOO9\n"})
    assert await grep_text(tmp_path, pattern=r"foo\d+") == "r.txt:1: foo123"
    assert await grep_text(tmp_path, pattern=r"foo\d+", ignoreCase=True) == (
        "r.txt:1: foo123\nr.txt:3: FOO9"
    )


async def test_undecodable_bytes_shown_as_replacement_characters(tmp_path: Path) -> None:
    make(tmp_path, {"b.txt": b"x\xffmatch\n"})
    assert await grep_text(tmp_path, pattern="match", path="b.txt") == "b.txt:1: x\ufffdmatch"
    assert await grep_text(tmp_path, pattern="match", path="b.txt", context=1) == (
        "b.txt:1: x\ufffdmatch"
    )


async def test_unreadable_file_in_context_mode(tmp_path: Path) -> None:
    class NoReads(LocalFileOperations):
        async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
            raise PermissionError(13, "Permission denied", path)

    make(tmp_path, {"f.txt": "a\nhit\n"})
    result = await grep(tmp_path, NoReads(), pattern="hit", context=1)
    assert text(result) == "f.txt:2: (unable to read file)"


async def test_special_spaces_in_the_search_path(tmp_path: Path) -> None:
    make(tmp_path, {"my dir/a.txt": "hit\n"})
    assert await grep_text(tmp_path, pattern="hit", path="my\u00a0dir") == "a.txt:1: hit"


async def test_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    make_latin1_name(tmp_path, "zq7\n")
    assert await grep_text(tmp_path, pattern="zq7") == "caf\ufffd.txt:1: zq7"
    assert await grep_text(tmp_path, pattern="zq7", context=1) == "caf\ufffd.txt:1: zq7"


def make_latin1_name(root: Path, content: str) -> None:
    """A file named ``café.txt`` in Latin-1: not valid UTF-8."""
    Path(os.fsdecode(bytes(root) + b"/caf\xe9.txt")).write_text(content)


# What ripgrep 13 (the reference's rg) says for each pattern, recorded from /usr/bin/rg 13.0.0.
REGEX_ERRORS_OF_RIPGREP_13 = [
    ("(?", "regex parse error:\n    (?\n    ^\nerror: unclosed group"),
    ("a(?", "regex parse error:\n    a(?\n     ^\nerror: unclosed group"),
    ("(a|(?", "regex parse error:\n    (a|(?\n       ^\nerror: unclosed group"),
    ("(", "regex parse error:\n    (\n    ^\nerror: unclosed group"),
    ("x(", "regex parse error:\n    x(\n     ^\nerror: unclosed group"),
    ("((", "regex parse error:\n    ((\n     ^\nerror: unclosed group"),
    ("a(b(c", "regex parse error:\n    a(b(c\n       ^\nerror: unclosed group"),
    (")", "regex parse error:\n    )\n    ^\nerror: unopened group"),
    ("a)b)", "regex parse error:\n    a)b)\n     ^\nerror: unopened group"),
    ("x)(", "regex parse error:\n    x)(\n     ^\nerror: unopened group"),
    ("[", "regex parse error:\n    [\n    ^\nerror: unclosed character class"),
    ("a[^", "regex parse error:\n    a[^\n     ^^\nerror: unclosed character class"),
    (
        "\\",
        "regex parse error:\n    \\\n    ^\nerror: incomplete escape sequence, reached end of pattern prematurely",
    ),
    (
        "a\\",
        "regex parse error:\n    a\\\n     ^\nerror: incomplete escape sequence, reached end of pattern prematurely",
    ),
    (
        "\\p{",
        "regex parse error:\n    \\p{\n       ^\nerror: incomplete escape sequence, reached end of pattern prematurely",
    ),
    ("x{", "regex parse error:\n    x{\n     ^\nerror: unclosed counted repetition"),
    ("x{2,", "regex parse error:\n    x{2,\n     ^^^\nerror: unclosed counted repetition"),
    ("(?i", "regex parse error:\n    (?i\n       ^\nerror: expected flag but got end of regex"),
    ("(?P<n", "regex parse error:\n    (?P<n\n         ^\nerror: unclosed capture group name"),
    ("(?P<n>", "regex parse error:\n    (?P<n>\n    ^\nerror: unclosed group"),
    ("a(?:", "regex parse error:\n    a(?:\n     ^\nerror: unclosed group"),
    (
        "a{2,1}",
        "regex parse error:\n    a{2,1}\n     ^^^^^\nerror: invalid repetition count range, the start must be <= the end",
    ),
    (
        "\\p{Foo}",
        "regex parse error:\n    \\p{Foo}\n    ^^^^^^^\nerror: Unicode property not found",
    ),
    ("*", "regex parse error:\n    *\n    ^\nerror: repetition operator missing expression"),
    (
        "(?P<n>a)(?P<n>b)",
        "regex parse error:\n    (?P<n>a)(?P<n>b)\n        ^       ^\nerror: duplicate capture group name",
    ),
    (
        "\\1",
        "regex parse error:\n    \\1\n    ^^\nerror: backreferences are not supported\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around.",
    ),
    (
        "(?=a)",
        "regex parse error:\n    (?=a)\n    ^^^\nerror: look-around, including look-ahead and look-behind, is not supported\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around.",
    ),
]


def rg_says(cwd: Path, pattern: str) -> str:
    """The error text of the ripgrep pi runs (:func:`find_rg`) for ``pattern``, trimmed."""
    done = subprocess.run(
        [find_rg(), "--no-config", "--", pattern, "."],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    return done.stderr.strip()


@pytest.mark.parametrize("pattern", [p for p, _ in REGEX_ERRORS_OF_RIPGREP_13 if p != "x)("])
async def test_a_regex_error_is_the_text_of_the_ripgrep_that_runs(
    tmp_path: Path, pattern: str
) -> None:
    """As Pi: ripgrep's message, trimmed, whatever its version (no mapping between versions)."""
    make(tmp_path, {"a.txt": "x\n"})
    assert await grep_error(tmp_path, pattern=pattern) == rg_says(tmp_path, pattern)


def test_ripgrep_on_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """find_rg looks as Pi does: the user's rg on PATH, else the one pi ships (the wheel's)."""
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    assert find_rg.__wrapped__() == str(fake)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    import sysconfig

    assert find_rg.__wrapped__() == os.path.join(sysconfig.get_path("scripts"), "rg")


def _system_ripgrep_13() -> str:
    path = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p != os.path.dirname(sys.executable)
    )
    found = shutil.which("rg", path=path)
    if found is None:
        pytest.skip("no ripgrep on PATH besides the wheel's")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if not version.startswith("ripgrep 13."):
        pytest.skip(f"the system ripgrep is not 13 ({version.splitlines()[0]})")
    return path


@pytest.mark.parametrize(("pattern", "expected"), REGEX_ERRORS_OF_RIPGREP_13)
def test_with_ripgrep_13_on_path_the_texts_are_ripgrep_13s(
    tmp_path: Path, pattern: str, expected: str
) -> None:
    """``pi call grep`` with the system's ripgrep 13 first on PATH (as the reference runs it):
    exactly its texts, also where ripgrep 14 words them otherwise (``x)(``, which 14 accepts)."""
    path = _system_ripgrep_13()
    make(tmp_path, {"a.txt": "x\n"})
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "pi"),
            "call",
            "grep",
            json.dumps({"pattern": pattern}),
            "--json",
        ],
        cwd=tmp_path,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(done.stdout)["content"][0]["text"] == expected


async def test_literal_pattern_with_stray_paren_is_searched(tmp_path: Path) -> None:
    make(tmp_path, {"a.txt": "call x)(\n"})
    assert await grep_text(tmp_path, pattern="x)(", literal=True) == "a.txt:1: call x)("
