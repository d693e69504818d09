"""The ``find`` tool (spec §7.6, §8.12 #156–160; conformance ``find-*``): fd's glob semantics
over ``rg --files``, in a deterministic order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.search.fd_glob import (
    EffectivePattern,
    GlobError,
    compile_fd_glob,
    fd_effective_pattern,
)
from pi_builtin_tools.search.find import create_find_tool_definition
from pi_core._errors import ToolError
from pi_core._wire.messages import AgentToolResult
from support import make, text


async def find(cwd: Path, **params: Any) -> AgentToolResult:
    tool = create_find_tool_definition(str(cwd), LocalFileOperations())
    return await tool.execute("c1", params, None, None)


async def find_text(cwd: Path, **params: Any) -> str:
    return text(await find(cwd, **params))


async def find_error(cwd: Path, **params: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await find(cwd, **params)
    return str(caught.value)


async def git_init(root: Path) -> None:
    await trio.run_process(["git", "init", "-q", str(root)])


def test_definition_is_pis() -> None:
    tool = create_find_tool_definition("/tmp", LocalFileOperations())
    assert (tool.name, tool.label) == ("find", "find")
    assert tool.description == (
        "Search for files by glob pattern. Returns matching file paths relative to the search "
        "directory. Respects .gitignore. Output is truncated to 1000 results or 50KB "
        "(whichever is hit first)."
    )
    assert tool.prompt_snippet == "Find files by glob pattern (respects .gitignore)"
    assert tool.parameters == {
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {
                "type": "string",
                "description": (
                    "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without "
                    "'/', e.g. '*.ts', it matches file names at any depth"
                ),
            },
            "path": {
                "type": "string",
                "description": "Directory to search in (default: current directory)",
            },
            "limit": {
                "type": "number",
                "description": "Maximum number of results (default: 1000)",
            },
        },
    }


# --- conformance cases ------------------------------------------------------------------------


async def test_conformance_find_errors(tmp_path: Path) -> None:
    assert await find_error(tmp_path, pattern="[") == (
        "[fd error]: error parsing glob '[': unclosed character class; missing ']'"
    )
    assert await find_error(tmp_path, pattern="*.txt", path="nope") == (
        f"[fd error]: Search path '{tmp_path}/nope' is not a directory.\n"
        "[fd error]: No valid search paths given."
    )


async def test_conformance_find_gitignore_outside_git(tmp_path: Path) -> None:
    make(tmp_path, {".gitignore": "ignored.txt\n", "ignored.txt": "i\n", "kept.txt": "k\n"})
    result = await find(tmp_path, pattern="*.txt")
    assert text(result) == "kept.txt"
    assert result.details is None


async def test_conformance_find_hidden_and_directories(tmp_path: Path) -> None:
    make(tmp_path, [".secret/hidden.txt", "other.md", "build/out.bin"])
    assert await find_text(tmp_path, pattern="*.txt") == ".secret/hidden.txt"
    assert await find_text(tmp_path, pattern="build") == "build/"


async def test_conformance_find_limit_notice(tmp_path: Path) -> None:
    """find-limit-notice (Pi 1.6): exactly ``limit`` results give no notice."""
    make(tmp_path, ["only.log", "b.txt"])
    result = await find(tmp_path, pattern="*.log", limit=1)
    assert text(result) == "only.log"
    assert result.details is None


async def test_limit_notice_needs_one_more_result(tmp_path: Path) -> None:
    make(tmp_path, ["a.log", "b.log"])
    result = await find(tmp_path, pattern="*.log", limit=1)
    assert text(result) == (
        "a.log\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    )
    assert result.details == {"resultLimitReached": 1}


async def test_conformance_find_no_match(tmp_path: Path) -> None:
    make(tmp_path, ["a.txt"])
    assert await find_text(tmp_path, pattern="*.xyz") == "No files found matching pattern"
    assert await find_text(tmp_path, pattern="--help") == "No files found matching pattern"


async def test_conformance_find_path_pattern(tmp_path: Path) -> None:
    make(tmp_path, ["src/app/util.ts", "src/app/util.js", "test/util.ts.bak"])
    assert await find_text(tmp_path, pattern="src/**/*.ts") == "src/app/util.ts"


# --- §8.12 scenarios --------------------------------------------------------------------------


async def test_scenario_156_recursive_glob_includes_hidden_directories(tmp_path: Path) -> None:
    make(tmp_path, ["visible.txt", ".secret/hidden.txt", "notes.md"])
    assert await find_text(tmp_path, pattern="**/*.txt") == ".secret/hidden.txt\nvisible.txt"


async def test_scenario_157_gitignore_inside_a_git_repository(tmp_path: Path) -> None:
    await git_init(tmp_path)
    make(tmp_path, {".gitignore": "ignored.txt\n", "ignored.txt": "i\n", "kept.txt": "k\n"})
    assert await find_text(tmp_path, pattern="*.txt") == "kept.txt"


async def test_scenario_158_invalid_glob_is_an_error(tmp_path: Path) -> None:
    assert "error parsing glob" in await find_error(tmp_path, pattern="[")


async def test_scenario_159_flag_like_pattern_is_a_pattern(tmp_path: Path) -> None:
    make(tmp_path, ["a.txt", "--help"])
    assert await find_text(tmp_path, pattern="--version") == "No files found matching pattern"
    assert await find_text(tmp_path, pattern="--help") == "--help"


async def test_scenario_160_limit_two(tmp_path: Path) -> None:
    make(tmp_path, ["a.txt", "b.txt", "c.txt"])
    result = await find(tmp_path, pattern="*.txt", limit=2)
    assert text(result) == (
        "a.txt\nb.txt\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert result.details == {"resultLimitReached": 2}


# --- fd's glob semantics ------------------------------------------------------------------------


async def test_deterministic_order_directory_before_its_contents(tmp_path: Path) -> None:
    make(tmp_path, ["b/z.txt", "a.txt", "b/a/y.txt", "b.txt", "a/x.txt", "a-b/w.txt"])
    assert await find_text(tmp_path, pattern="*") == (
        "a/\na/x.txt\na-b/\na-b/w.txt\na.txt\nb/\nb/a/\nb/a/y.txt\nb/z.txt\nb.txt"
    )


async def test_basename_pattern_matches_at_any_depth_files_and_directories(
    tmp_path: Path,
) -> None:
    make(tmp_path, ["test/a.py", "src/test/b.py", "src/test.py", "testing/c.py"])
    assert await find_text(tmp_path, pattern="test") == "src/test/\ntest/"
    assert await find_text(tmp_path, pattern="test*") == ("src/test/\nsrc/test.py\ntest/\ntesting/")


async def test_smart_case(tmp_path: Path) -> None:
    make(tmp_path, ["Upper.TS", "lower.ts"])
    assert await find_text(tmp_path, pattern="*.ts") == "Upper.TS\nlower.ts"
    assert await find_text(tmp_path, pattern="*.TS") == "Upper.TS"
    assert await find_text(tmp_path, pattern="upper.ts") == "Upper.TS"


async def test_path_pattern_is_anchored_at_the_search_directory(tmp_path: Path) -> None:
    # Pi 1.6: a pattern with "/" is matched from the start of the relative path
    make(tmp_path, ["src/a.ts", "src/x/b.ts", "lib/src/c.ts"])
    assert await find_text(tmp_path, pattern="src/*.ts") == "src/a.ts"
    assert await find_text(tmp_path, pattern="./src/*.ts") == "src/a.ts"
    assert await find_text(tmp_path, pattern="**/src/*.ts") == "lib/src/c.ts\nsrc/a.ts"
    assert await find_text(tmp_path, pattern="src/**") == "src/a.ts\nsrc/x/\nsrc/x/b.ts"
    assert await find_text(tmp_path, pattern="**/x") == "src/x/"
    assert await find_text(tmp_path, pattern="src/*.ts", path="lib") == "src/c.ts"


async def test_path_pattern_case_follows_the_pattern_as_given(tmp_path: Path) -> None:
    make(tmp_path, ["Docs/README.md", "Docs/readme.txt"])
    # all lowercase: --ignore-case (the search path's own capitals do not count)
    assert await find_text(tmp_path, pattern="docs/readme*") == "Docs/README.md\nDocs/readme.txt"
    assert await find_text(tmp_path, pattern="Docs/README*") == "Docs/README.md"


async def test_path_pattern_matches_the_absolute_path(tmp_path: Path) -> None:
    # fd --full-path matches the absolute path: an absolute pattern works as is.
    make(tmp_path, ["src/a.ts", "b.ts"])
    assert await find_text(tmp_path, pattern=f"{tmp_path}/src/*.ts") == "src/a.ts"
    assert await find_text(tmp_path, pattern="/src/*.ts") == "No files found matching pattern"


async def test_braces_classes_and_question_mark(tmp_path: Path) -> None:
    make(tmp_path, ["a.js", "b.ts", "c.md", "d1.txt", "dd.txt"])
    assert await find_text(tmp_path, pattern="*.{js,ts}") == "a.js\nb.ts"
    assert await find_text(tmp_path, pattern="d[0-9].txt") == "d1.txt"
    assert await find_text(tmp_path, pattern="d?.txt") == "d1.txt\ndd.txt"


async def test_empty_pattern_lists_everything(tmp_path: Path) -> None:
    make(tmp_path, ["a/b.txt"])
    assert await find_text(tmp_path, pattern="") == "a/\na/b.txt"


async def test_nested_gitignore_applies_below_its_directory_only(tmp_path: Path) -> None:
    make(
        tmp_path,
        {"sub/.gitignore": "*.log\n", "sub/a.log": "", "top.log": "", "sub/deep/b.log": ""},
    )
    assert await find_text(tmp_path, pattern="*.log") == "top.log"


async def test_gitignored_directory_is_not_entered(tmp_path: Path) -> None:
    make(tmp_path, {".gitignore": "node_modules/\n", "node_modules/x/index.js": "", "a.js": ""})
    assert await find_text(tmp_path, pattern="*.js") == "a.js"
    assert await find_text(tmp_path, pattern="node_modules") == "No files found matching pattern"


async def test_search_path_argument_and_relative_output(tmp_path: Path) -> None:
    make(tmp_path, ["pkg/src/a.ts", "pkg/b.ts", "other/c.ts"])
    assert await find_text(tmp_path, pattern="*.ts", path="pkg") == "b.ts\nsrc/a.ts"
    assert await find_text(tmp_path, pattern="*.ts", path=str(tmp_path / "pkg")) == (
        "b.ts\nsrc/a.ts"
    )


async def test_a_file_as_search_path_is_an_error(tmp_path: Path) -> None:
    make(tmp_path, ["a.txt"])
    assert await find_error(tmp_path, pattern="*", path="a.txt") == (
        f"[fd error]: Search path '{tmp_path}/a.txt' is not a directory.\n"
        "[fd error]: No valid search paths given."
    )


async def test_glob_error_names_the_anchored_pattern(tmp_path: Path) -> None:
    assert await find_error(tmp_path, pattern="src/{a,b") == (
        f"[fd error]: error parsing glob '{tmp_path}/src/{{a,b': unclosed alternate group; "
        "missing '}' (maybe escape '{' with '[{]'?)"
    )


async def test_output_over_50kb(tmp_path: Path) -> None:
    names = [f"{i:03d}" + "f" * 197 for i in range(300)]
    make(tmp_path, names)
    result = await find(tmp_path, pattern="*")
    assert text(result) == "\n".join(names[:254]) + "\n\n[50.0KB limit reached]"
    assert result.details["truncation"]["outputLines"] == 254
    assert list(result.details) == ["truncation"]


async def test_special_spaces_in_the_search_path(tmp_path: Path) -> None:
    make(tmp_path, ["my dir/a.txt"])
    assert await find_text(tmp_path, pattern="*.txt", path="my\u00a0dir") == "a.txt"


async def test_file_names_with_newlines_survive(tmp_path: Path) -> None:
    make(tmp_path, ["odd\nname.txt", "plain.txt"])
    assert await find_text(tmp_path, pattern="*name.txt") == "odd\nname.txt"


# --- the glob compiler on its own ------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.txt", "/w/.secret/hidden.txt", True),
        ("*.txt", "/w/a.txt.bak", False),
        ("**", "/w/a/b", True),
        ("src/**/*.spec.ts", "/w/src/a.spec.ts", True),
        ("src/**/*.spec.ts", "/w/src/a/b/c.spec.ts", True),
        ("src/**/*.spec.ts", "/w/lib/a.spec.ts", False),
        ("**/*.json", "/w/x.json", True),
        ("a**b", "/w/axxb", True),
        ("[!a]*", "/w/bc", True),
        ("[!a]*", "/w/abc", False),
        ("\\*", "/w/*", True),
        ("\\*", "/w/x", False),
    ],
)
def test_glob_matches(pattern: str, path: str, expected: bool) -> None:
    assert compile_fd_glob(pattern, "/w").matches(path) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("[]", "unclosed character class; missing ']'"),
        ("[z-a]", "invalid range; 'z' > 'a'"),
        ("a,b}", "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)"),
        ("a\\", "dangling '\\'"),
    ],
)
def test_glob_errors(pattern: str, message: str) -> None:
    with pytest.raises(GlobError) as caught:
        compile_fd_glob(pattern, "/w")
    assert str(caught.value) == f"error parsing glob '{pattern}': {message}"


def test_effective_pattern() -> None:
    """Pi 1.6's rewrite: ./ dropped; relative path patterns anchored at the escaped root."""
    assert fd_effective_pattern("*.ts", "/w") == EffectivePattern("*.ts", False)
    assert fd_effective_pattern("././*.ts", "/w") == EffectivePattern("*.ts", False)
    assert fd_effective_pattern("src/*.ts", "/w/") == EffectivePattern("/w/src/*.ts", True, True)
    assert fd_effective_pattern("**/A", "/w") == EffectivePattern("/w/**/A", True, False)
    assert fd_effective_pattern("a/b", "/x[1]{2}*?") == (
        EffectivePattern("/x\\[1\\]\\{2\\}\\*\\?/a/b", True, True)
    )
    assert fd_effective_pattern("/abs/*", "/w") == EffectivePattern("/abs/*", True)


async def test_limit_zero_or_below_means_one(tmp_path: Path) -> None:
    """r16-limit-probe-and-floor / r16-find-limit-zero-notice: ``max(1, floor(limit))``."""
    make(tmp_path, ["a.js", "b.ts"])
    notice = "\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    assert await find_text(tmp_path, pattern="*", limit=0) == "a.js" + notice
    assert await find_text(tmp_path, pattern="*", limit=-1) == "a.js" + notice


async def test_names_that_are_not_utf8_are_shown_with_replacement_characters(
    tmp_path: Path,
) -> None:
    make_latin1_name(tmp_path, "x")
    assert await find_text(tmp_path, pattern="caf*") == "caf\ufffd.txt"


def make_latin1_name(root: Path, content: str) -> None:
    """A file named ``café.txt`` in Latin-1: not valid UTF-8."""
    Path(os.fsdecode(bytes(root) + b"/caf\xe9.txt")).write_text(content)


async def test_gitignore_of_a_parent_directory_applies_to_a_sub_search(tmp_path: Path) -> None:
    make(tmp_path, {".gitignore": "*.log\n", "pkg/a.log": "", "pkg/a.txt": ""})
    assert await find_text(tmp_path, pattern="*", path="pkg") == "a.txt"


async def test_fractional_limit_is_floored(tmp_path: Path) -> None:
    make(tmp_path, ["a", "b", "c"])
    assert await find_text(tmp_path, pattern="*", limit=1.5) == (
        "a\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    )
    assert await find_text(tmp_path, pattern="*", limit=3.9) == "a\nb\nc"
    assert await find_error(tmp_path, pattern="*", limit=float("inf")) == (
        "limit must be a positive integer, got Infinity"
    )


async def test_float_limit_with_integer_value(tmp_path: Path) -> None:
    make(tmp_path, ["a", "b", "c"])
    assert await find_text(tmp_path, pattern="*", limit=2.0) == (
        "a\nb\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    )


# --- documented differences from fd (see the module docstring of pi_builtin_tools.search.find) -------


async def test_known_difference_symlinks_are_not_listed(tmp_path: Path) -> None:
    make(tmp_path, ["real/a.txt", "empty/"])
    os.symlink("real/a.txt", tmp_path / "link.txt")
    os.symlink("real", tmp_path / "linkdir")
    assert await find_text(tmp_path, pattern="*") == "empty/\nreal/\nreal/a.txt"


async def test_git_directory_is_listed_as_fd_does(tmp_path: Path) -> None:
    await git_init(tmp_path)
    assert await find_text(tmp_path, pattern="HEAD") == ".git/HEAD"
