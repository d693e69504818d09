"""The ``ls`` tool (spec §7.7, §8.12 #161–162, port decision 3; conformance ``ls-*``)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.search.ls import create_ls_tool_definition
from pi_core._errors import ToolError
from pi_core._wire.messages import AgentToolResult
from support import make, text


async def ls(cwd: Path, ops: Any = None, **params: Any) -> AgentToolResult:
    tool = create_ls_tool_definition(str(cwd), ops or LocalFileOperations())
    return await tool.execute("c1", params, None, None)


async def ls_error(cwd: Path, ops: Any = None, **params: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await ls(cwd, ops, **params)
    return str(caught.value)


def test_definition_is_pis() -> None:
    tool = create_ls_tool_definition("/tmp", LocalFileOperations())
    assert (tool.name, tool.label) == ("ls", "ls")
    assert tool.description == (
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for "
        "directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever "
        "is hit first)."
    )
    assert tool.prompt_snippet == "List directory contents"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory to list (default: current directory)",
            },
            "limit": {
                "type": "number",
                "description": "Maximum number of entries to return (default: 500)",
            },
        },
    }


# --- conformance cases ------------------------------------------------------------------------


async def test_conformance_ls_sorted_with_dirs(tmp_path: Path) -> None:
    make(tmp_path, ".hidden", "b.txt", "a.txt", "sub/x.txt", ".cache/y")
    result = await ls(tmp_path)
    assert text(result) == ".cache/\n.hidden\na.txt\nb.txt\nsub/"
    assert result.details is None
    assert "details" not in result.to_json_dict()


async def test_conformance_ls_limit(tmp_path: Path) -> None:
    make(tmp_path, "one.txt", "two.txt", "three.txt", "four/")
    result = await ls(tmp_path, limit=2)
    assert text(result) == "four/\none.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    assert result.details == {"entryLimitReached": 2}


async def test_conformance_ls_empty_dir(tmp_path: Path) -> None:
    make(tmp_path, "emptydir/")
    result = await ls(tmp_path, path="emptydir")
    assert text(result) == "(empty directory)"
    assert result.details is None


async def test_conformance_ls_errors(tmp_path: Path) -> None:
    make(tmp_path, "a.txt")
    assert await ls_error(tmp_path, path="a.txt") == f"Not a directory: {tmp_path}/a.txt"
    assert await ls_error(tmp_path, path="nope") == f"Path not found: {tmp_path}/nope"


# --- §8.12 scenarios --------------------------------------------------------------------------


async def test_scenario_161_lists_dotfiles_and_dot_directories(tmp_path: Path) -> None:
    make(tmp_path, ".hidden-file", ".hidden-dir/", "visible")
    assert text(await ls(tmp_path)) == ".hidden-dir/\n.hidden-file\nvisible"


@pytest.mark.parametrize("limit", [0, -1, 1.5])
async def test_limit_is_floored_and_at_least_one(tmp_path: Path, limit: float) -> None:
    """r16-limit-probe-and-floor (Pi 1.6): ``limit: 0`` lists one entry, 1.5 means 1."""
    make(tmp_path, "a", "b")
    assert text(await ls(tmp_path, limit=limit)) == (
        "a\n\n[1 entries limit reached. Use limit=2 for more]"
    )


async def test_infinite_limit_is_an_error(tmp_path: Path) -> None:
    make(tmp_path, "a", "b")
    assert await ls_error(tmp_path, limit=float("inf")) == (
        "limit must be a positive integer, got Infinity"
    )


# --- sorting (port decision 3) ------------------------------------------------------------------


async def test_sorted_by_case_folded_name_ties_by_name(tmp_path: Path) -> None:
    make(tmp_path, "b.txt", "C.txt", "a.txt", "A.txt", "Dir/", "ß.md", "ss.md")
    # casefold: "ß" folds to "ss", so "ss.md" and "ß.md" tie and are ordered by the name itself.
    assert text(await ls(tmp_path)) == "A.txt\na.txt\nb.txt\nC.txt\nDir/\nss.md\nß.md"


async def test_order_does_not_depend_on_readdir_order(tmp_path: Path) -> None:
    class Reversed(LocalFileOperations):
        async def list_dir(self, path: str) -> list[str]:
            return sorted(await super().list_dir(path), reverse=True)

    make(tmp_path, "x", "X", "y", "1", "a.b")
    expected = "1\na.b\nX\nx\ny"
    assert text(await ls(tmp_path)) == expected
    assert text(await ls(tmp_path, Reversed())) == expected


# --- entries ------------------------------------------------------------------------------------


async def test_symlinks_followed_and_broken_ones_skipped(tmp_path: Path) -> None:
    make(tmp_path, "real/", "file.txt")
    os.symlink("real", tmp_path / "link-to-dir")
    os.symlink("file.txt", tmp_path / "link-to-file")
    os.symlink("missing", tmp_path / "broken")
    assert text(await ls(tmp_path)) == "file.txt\nlink-to-dir/\nlink-to-file\nreal/"


async def test_default_path_is_the_cwd_and_relative_paths_resolve_against_it(
    tmp_path: Path,
) -> None:
    make(tmp_path, "top.txt", "sub/inner.txt", "sub/deeper/")
    assert text(await ls(tmp_path)) == "sub/\ntop.txt"
    assert text(await ls(tmp_path, path="sub")) == "deeper/\ninner.txt"
    assert text(await ls(tmp_path / "sub", path="..")) == "sub/\ntop.txt"
    assert text(await ls(tmp_path, path=str(tmp_path / "sub"))) == "deeper/\ninner.txt"
    assert text(await ls(tmp_path, path="@sub")) == "deeper/\ninner.txt"


async def test_special_spaces_in_the_path_fall_back_to_plain_spaces(tmp_path: Path) -> None:
    # Kind path/special-spaces (case c29): a model types U+00A0 or U+202F where the name has
    # U+0020; the exact name wins when it exists.
    make(tmp_path, "my dir/plain.txt", "nbsp\u202fdir/exact.txt")
    assert text(await ls(tmp_path, path="my\u00a0dir")) == "plain.txt"
    assert text(await ls(tmp_path, path="my\u202fdir")) == "plain.txt"
    assert text(await ls(tmp_path, path="nbsp\u202fdir")) == "exact.txt"


async def test_limit_reached_exactly_is_not_reported(tmp_path: Path) -> None:
    make(tmp_path, "a", "b")
    result = await ls(tmp_path, limit=2)
    assert text(result) == "a\nb"
    assert result.details is None


async def test_float_limit_prints_like_javascript(tmp_path: Path) -> None:
    make(tmp_path, "a", "b", "c")
    result = await ls(tmp_path, limit=2.0)
    assert text(result) == "a\nb\n\n[2 entries limit reached. Use limit=4 for more]"


async def test_output_over_50kb_is_cut_on_a_line_with_notice(tmp_path: Path) -> None:
    names = [f"{i:03d}" + "n" * 197 for i in range(300)]  # 200-byte names: 60,299 bytes joined
    make(tmp_path, *names)
    result = await ls(tmp_path)
    kept = names[:254]  # 254 * 201 - 1 = 51,053 bytes fit; 255 lines would need 51,254
    assert text(result) == "\n".join(kept) + "\n\n[50.0KB limit reached]"
    truncation = result.details["truncation"]
    assert truncation == {
        "content": "\n".join(kept),
        "truncated": True,
        "truncatedBy": "bytes",
        "totalLines": 300,
        "totalBytes": 300 * 201 - 1,
        "outputLines": 254,
        "outputBytes": 254 * 201 - 1,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 2**53 - 1,
        "maxBytes": 51200,
    }
    assert list(result.details) == ["truncation"]


async def test_entry_limit_and_byte_limit_notices_together(tmp_path: Path) -> None:
    names = [f"{i:03d}" + "n" * 197 for i in range(300)]
    make(tmp_path, *names)
    result = await ls(tmp_path, limit=280)
    assert text(result) == (
        "\n".join(names[:254])
        + "\n\n[280 entries limit reached. Use limit=560 for more. 50.0KB limit reached]"
    )
    assert list(result.details) == ["entryLimitReached", "truncation"]
    assert result.details["entryLimitReached"] == 280


async def test_unreadable_directory_reports_node_error(tmp_path: Path) -> None:
    # Root ignores permission bits, so the refusal comes from a backend that says EACCES.
    class Refusing(LocalFileOperations):
        async def list_dir(self, path: str) -> list[str]:
            raise PermissionError(errno.EACCES, "Permission denied", path)

    make(tmp_path, "locked/")
    assert await ls_error(tmp_path, Refusing(), path="locked") == (
        f"Cannot read directory: EACCES: permission denied, scandir '{tmp_path}/locked'"
    )


async def test_names_that_are_not_utf8_are_shown_with_replacement_characters(
    tmp_path: Path,
) -> None:
    make_latin1_name(tmp_path, "x")
    make(tmp_path, "a.txt")
    result = await ls(tmp_path)
    assert text(result) == "a.txt\ncaf\ufffd.txt"
    assert result.to_json_dict()["content"][0]["text"] == "a.txt\ncaf\ufffd.txt"


def make_latin1_name(root: Path, content: str) -> None:
    """A file named ``café.txt`` in Latin-1: not valid UTF-8."""
    Path(os.fsdecode(bytes(root) + b"/caf\xe9.txt")).write_text(content)
