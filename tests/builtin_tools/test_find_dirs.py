"""The directories find lists that ``rg --files`` cannot show (``pi_builtin_tools.search.find_dirs``):
empty ones and ones whose files are all ignored, unless ignored themselves, as fd lists them
(Pi 1.6's find with ``*``; side by side in ``tests/e2e/cases16_pi/path-patterns``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.search.find import create_find_tool_definition
from pi_builtin_tools.search.find_dirs import parse_ignore_file
from pi_core import FileOperations
from pi_core.backends import LocalFileOperations


def make(root: Path, entries: dict[str, str | None]) -> None:
    for rel, content in entries.items():
        path = root / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)


class WithoutBulkListing:
    """The local backend without its optional ``list_dirs``: find walks with ``list_dir``,
    ``stat`` and ``realpath`` (what a remote backend offers)."""

    def __init__(self) -> None:
        self.inner = LocalFileOperations()
        self.list_dir_calls = 0

    async def list_dir(self, path: str) -> list[str]:
        self.list_dir_calls += 1
        return await self.inner.list_dir(path)

    def __getattr__(self, name: str) -> Any:
        if name == "list_dirs":
            raise AttributeError(name)
        return getattr(self.inner, name)


async def find_text(root: Path, operations: Any, pattern: str, path: str | None = None) -> str:
    tool = create_find_tool_definition(str(root), operations)
    params = {"pattern": pattern} if path is None else {"pattern": pattern, "path": path}
    result = await tool.execute("c1", params, None, None)
    return result.text


TREE: dict[str, str | None] = {
    ".gitignore": "build/\n*.log\n__pycache__/\n/tmp-*\n",
    "src/a.py": "a",
    "src/__pycache__/a.pyc": "x",
    "build/out.txt": "o",
    "build/empty": None,
    "logs/x.log": "l",
    "logs/old/y.log": "l",
    "e1/e2/e3": None,
    "tmp-1/keep.txt": "t",
    "deep/tmp-2/k.txt": "k",
}
EXPECTED = (
    ".gitignore\ndeep/\ndeep/tmp-2/\ndeep/tmp-2/k.txt\ne1/\ne1/e2/\ne1/e2/e3/\nlogs/\nlogs/old/\n"
    "src/\nsrc/a.py"
)


@pytest.mark.parametrize("backend", [LocalFileOperations, WithoutBulkListing])
async def test_star_lists_the_directories_fd_lists(tmp_path: Path, backend: Any) -> None:
    make(tmp_path, TREE)
    operations: FileOperations = backend()
    assert await find_text(tmp_path, operations, "*") == EXPECTED


LAYERED: dict[str, str | None] = {
    ".ignore": "cache/\n",
    "pkg/.gitignore": "*.bin\ngen/\n!keep/\n",
    "pkg/.rgignore": "!cache/\n",  # .rgignore wins over .ignore
    "pkg/cache/c.bin": "c",
    "pkg/gen/g.txt": "g",
    "pkg/keep/k.bin": "k",
    "pkg/sub/cache/d.bin": "d",
    "pkg/sub/deeper/e.bin": "e",
    "top/cache/f.bin": "f",
    "top/.git/info/exclude": "secret/\n",
    "top/secret/s.bin": "s",
    "top/empty": None,
}


async def test_ignore_files_below_and_above_the_search_path(tmp_path: Path) -> None:
    make(tmp_path, LAYERED)
    assert await find_text(tmp_path, LocalFileOperations(), "*", "pkg") == (
        ".gitignore\n.rgignore\ncache/\nkeep/\nsub/\nsub/cache/\nsub/deeper/"
    )
    assert await find_text(tmp_path, LocalFileOperations(), "cache") == (
        "pkg/cache/\npkg/sub/cache/"
    )


@pytest.mark.parametrize("tree", [TREE, LAYERED], ids=["tree", "layered"])
async def test_listed_directories_are_where_ripgrep_would_list_a_file(
    tmp_path: Path, tree: dict[str, str | None], require_program: Any
) -> None:
    """The oracle is ripgrep itself: a directory is listed exactly when a file put into it
    would be listed by ``rg --files``."""
    rg = require_program("rg")
    make(tmp_path / "w", tree)
    listed = await find_text(tmp_path / "w", LocalFileOperations(), "*")
    shown = {line[:-1] for line in listed.split("\n") if line.endswith("/")}
    every = sorted(
        str(d.relative_to(tmp_path / "w")) for d in (tmp_path / "w").rglob("*") if d.is_dir()
    )
    expected = set()
    for rel in every:
        probe = tmp_path / "w" / rel / "pi-probe"
        probe.write_text("")
        done = await trio.run_process(
            [rg, "--files", "--hidden", "--no-require-git", "--no-config"],
            cwd=tmp_path / "w",
            capture_stdout=True,
            check=False,
        )
        probe.unlink()
        if f"{rel}/pi-probe" in done.stdout.decode().split("\n"):
            expected.add(rel)
    assert shown == expected


async def test_directory_of_ignored_files_is_listed_but_ignored_directory_is_not(
    tmp_path: Path,
) -> None:
    make(tmp_path, {".gitignore": "*.o\nout/\n", "obj/a.o": "", "out/b.txt": "", "k.c": ""})
    operations = LocalFileOperations()
    assert await find_text(tmp_path, operations, "*") == ".gitignore\nk.c\nobj/"


async def test_a_walk_without_unlisted_directories_reads_no_ignore_file(tmp_path: Path) -> None:
    make(tmp_path, {"a/b.txt": "", "c.txt": ""})
    operations = WithoutBulkListing()
    assert await find_text(tmp_path, operations, "*") == "a/\na/b.txt\nc.txt"
    assert operations.list_dir_calls == 2  # the root and a/


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        ("build/", "build", True),
        ("build/", "a/build", True),
        ("/build", "a/build", None),
        ("/build", "build", True),
        ("a/b", "x/a/b", None),  # a slash inside anchors
        ("a/b", "a/b", True),
        ("*.log\n!keep.log", "keep.log", False),
        ("!keep.log\n*.log", "keep.log", True),  # the last matching rule decides
        ("# comment\n\n", "comment", None),
        ("\\#x", "#x", True),
        ("\\!y", "!y", True),
        ("docs/**", "docs", None),  # "/**" matches only what is inside
        ("docs/**", "docs/a", True),
        ("build/", "build/sub", None),  # no rule for what is below an ignored directory
        ("trail  ", "trail", True),
        ("[", "[", None),  # a glob globset cannot parse is skipped
    ],
)
def test_ignore_file_rules_are_the_ignore_crates(lines: str, path: str, expected: Any) -> None:
    verdict = None
    for rule in reversed(parse_ignore_file(lines)):
        if rule.regex.match(path):
            verdict = not rule.whitelist
            break
    assert verdict is expected
