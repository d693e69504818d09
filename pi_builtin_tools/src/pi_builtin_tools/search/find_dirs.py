"""The directories ``find`` lists that ``rg --files`` cannot show.

fd lists directories; ripgrep lists only files. find takes the directories above ripgrep's
files (:func:`directories_of`) and finds the others here (:func:`directories_without_files`):
those that are not ignored yet hold no file ripgrep lists, such as empty directories and
directories whose files are all ignored (Pi's ``find`` with ``*`` lists them, each with a
trailing ``/``).

The walk lists the directories ripgrep walked (the root and the directories above its files);
an entry that is neither a listed file nor one of them and is a directory (not a symbolic
link: fd does not follow them) is a result unless the ignore rules ripgrep applies ignore it
(:class:`IgnoreRules`), and its own subdirectories are looked at the same way.

Cost: one listing per directory of the walked tree, all in **one** worker-thread call per
level when the backend has ``list_dirs`` (the local one), else ``list_dir`` per directory and
``stat`` and ``realpath`` per entry that is neither a listed file nor a walked directory; the
ignore files are read only when some directory holds no listed file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from pi_builtin_tools.search.fd_glob import GlobError, glob_body
from pi_core import FileOperations

IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
"""The ignore files ripgrep reads in every directory, in its order of precedence."""

GIT_EXCLUDE = ".git/info/exclude"
"""A repository's own ignore rules, below the ignore files (ripgrep reads them too)."""

_CONCURRENCY = 16
"""Listings, stats and reads run at once on a backend without ``list_dirs``."""


def directories_of(rel_files: Iterable[str]) -> set[str]:
    """Every directory above a listed file (relative paths, the search root excluded)."""
    dirs: set[str] = set()
    for rel in rel_files:
        parent, sep, _ = rel.rpartition("/")
        while sep and parent not in dirs:
            dirs.add(parent)
            parent, sep, _ = parent.rpartition("/")
    return dirs


async def _each(items: Sequence[str], job: Any, limiter: trio.CapacityLimiter) -> list[Any]:
    """``job(item)`` for every item, at most ``limiter`` at once; the results in order."""
    out: list[Any] = [None] * len(items)

    async def run(i: int, item: str) -> None:
        async with limiter:
            out[i] = await job(item)

    async with trio.open_nursery() as nursery:
        for i, item in enumerate(items):
            nursery.start_soon(run, i, item)
    return out


class _Walker:
    """Directory listings of the tree below ``root``, as ``(name, is_directory)`` where a
    directory is a real one (not a link to one)."""

    def __init__(self, operations: FileOperations, root: str) -> None:
        self.operations = operations
        self.base = root.rstrip("/")
        self.limiter = trio.CapacityLimiter(_CONCURRENCY)
        self.real_base: str | None = None

    def absolute(self, rel: str) -> str:
        return f"{self.base}/{rel}" if rel else self.base or "/"

    async def listings(self, dirs: Sequence[str], known: set[str]) -> list[list[tuple[str, bool]]]:
        """The entries of each of ``dirs``; an entry whose relative path is in ``known`` is
        taken as not a directory without asking the backend (listed files, walked
        directories)."""
        bulk = getattr(self.operations, "list_dirs", None)
        if callable(bulk):
            listed = await bulk([self.absolute(rel) for rel in dirs])
            return [
                [(name, kind == "directory") for name, kind in entries or ()] for entries in listed
            ]

        async def names(rel: str) -> list[str]:
            try:
                return await self.operations.list_dir(self.absolute(rel))
            except OSError:
                return []

        all_names = await _each(dirs, names, self.limiter)
        unknown = [
            posixpath.join(rel, name) if rel else name
            for rel, entries in zip(dirs, all_names, strict=True)
            for name in entries
            if (posixpath.join(rel, name) if rel else name) not in known
        ]
        if unknown and self.real_base is None:
            self.real_base = (await self.operations.realpath(self.absolute(""))).rstrip("/")
        kinds = dict(
            zip(unknown, await _each(unknown, self._is_real_directory, self.limiter), strict=True)
        )
        return [
            [
                (name, kinds.get(posixpath.join(rel, name) if rel else name, False))
                for name in entries
            ]
            for rel, entries in zip(dirs, all_names, strict=True)
        ]

    async def _is_real_directory(self, rel: str) -> bool:
        path = self.absolute(rel)
        try:
            if (await self.operations.stat(path)).kind != "directory":
                return False
            return await self.operations.realpath(path) == f"{self.real_base}/{rel}"
        except OSError:
            return False


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    whitelist: bool
    only_dir: bool


def parse_ignore_file(text: str) -> list[_Rule]:
    """The rules of a gitignore-style file as the ``ignore`` crate reads them: ``#`` comments
    and blank lines skipped, trailing spaces dropped (unless escaped), ``!`` whitelists (``\\!``
    and ``\\#`` escape), a trailing ``/`` matches directories only, a pattern without ``/`` matches
    at any depth (``**/`` before it), any other is anchored at the file's directory (a leading
    ``/`` dropped), ``/**`` at the end matches only what is inside; globs are globset's with
    ``literal_separator``. A line globset cannot parse is skipped, as ripgrep skips it."""
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw if raw.endswith("\\ ") else raw.rstrip(" \t")
        if not line or line.startswith("#"):
            continue
        whitelist = line.startswith("!")
        if whitelist:
            line = line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        anchored = line.startswith("/")
        if anchored:
            line = line[1:]
        only_dir = line.endswith("/")
        if only_dir:
            line = line[:-1]
        if not line:
            continue
        if not anchored and "/" not in line and not line.startswith("**/"):
            line = "**/" + line
        if line.endswith("/**"):
            line += "/*"
        try:
            body, _ = glob_body(line)
        except GlobError:
            continue
        rules.append(_Rule(re.compile(f"(?:{body})\\Z", re.DOTALL), whitelist, only_dir))
    return rules


def _verdict(rules: list[_Rule], rel: str) -> bool | None:
    """The last rule matching the directory ``rel`` decides: ``True`` ignored, ``False``
    whitelisted, ``None`` no rule matches."""
    for rule in reversed(rules):
        if rule.regex.match(rel):
            return not rule.whitelist
    return None


class IgnoreRules:
    """The ignore rules ripgrep applies to a directory: ``.rgignore``, ``.ignore`` and
    ``.gitignore`` of every directory from the file system root down (with
    ``--no-require-git``, inside a git repository or not), then ``.git/info/exclude`` of a
    repository. For each kind the deepest file with a matching rule decides, and the kinds
    decide in that order (the ``ignore`` crate's precedence); a rule is matched against the path
    relative to its file's directory (:func:`parse_ignore_file`).

    Not read: git's global excludes file (``core.excludesFile``), which ripgrep honours too."""

    def __init__(self, operations: FileOperations) -> None:
        self.operations = operations
        self._rules: dict[str, list[list[_Rule]]] = {}  # directory -> rules per kind
        self._loaded: set[str] = set()
        self.limiter = trio.CapacityLimiter(_CONCURRENCY)

    async def _read(self, path: str) -> list[_Rule]:
        try:
            data = await self.operations.read_bytes(path)
        except OSError:
            return []
        return parse_ignore_file(data.decode("utf-8", "replace"))

    async def load(self, directory: str, names: set[str] | None) -> None:
        """Read the ignore files of ``directory`` (absolute); ``names``: its entry names when
        known (only the files present are read), ``None`` to try each."""
        if directory in self._loaded:
            return
        self._loaded.add(directory)
        kinds = [*IGNORE_FILES, GIT_EXCLUDE]
        wanted = [k for k in kinds if names is None or k.split("/")[0] in names]
        if not wanted:
            return
        base = directory.rstrip("/")
        read = await _each([f"{base}/{name}" for name in wanted], self._read, self.limiter)
        found = dict(zip(wanted, read, strict=True))
        if any(found.values()):
            self._rules[directory] = [found.get(kind, []) for kind in kinds]

    async def load_parents(self, root: str) -> None:
        """Read the ignore files of every directory above ``root``."""
        parent = posixpath.dirname(root.rstrip("/") or "/")
        while True:
            await self.load(parent, None)
            if parent == "/":
                break
            parent = posixpath.dirname(parent)

    def ignored(self, directory: str) -> bool:
        """Whether the directory at the absolute path ``directory`` is ignored (every
        directory above it loaded)."""
        ancestors = sorted(
            (a for a in self._rules if directory.startswith(a.rstrip("/") + "/")),
            key=len,
            reverse=True,
        )
        for kind in range(len(IGNORE_FILES) + 1):
            for ancestor in ancestors:  # deepest first
                verdict = _verdict(
                    self._rules[ancestor][kind], directory[len(ancestor.rstrip("/")) + 1 :]
                )
                if verdict is not None:
                    return verdict
        return False


async def directories_without_files(
    operations: FileOperations, root: str, rel_files: Iterable[str], walked: set[str]
) -> list[str]:
    """The directories below ``root`` (paths relative to it) that fd lists although no file of
    ``rel_files`` (ripgrep's listing) is in them; ``walked``: :func:`directories_of` those
    files. See the module docstring."""
    files = set(rel_files)
    walker = _Walker(operations, root)
    rules: IgnoreRules | None = None
    found: list[str] = []
    level = ["", *sorted(walked)]
    known = files | walked
    names: dict[str, set[str]] = {}  # entry names of every directory listed so far
    while level:
        listings = await walker.listings(level, known)
        for parent, entries in zip(level, listings, strict=True):
            names[parent] = {name for name, _ in entries}
        candidates = [
            posixpath.join(parent, name) if parent else name
            for parent, entries in zip(level, listings, strict=True)
            for name, is_dir in entries
            if is_dir and (posixpath.join(parent, name) if parent else name) not in known
        ]
        if not candidates:
            break
        if rules is None:
            rules = IgnoreRules(operations)
            await rules.load_parents(root)
            for parent in sorted(names):  # every directory listed so far
                await rules.load(walker.absolute(parent), names[parent])
        else:
            for parent in level:
                await rules.load(walker.absolute(parent), names[parent])
        level = [c for c in candidates if not rules.ignored(walker.absolute(c))]
        found += level
        known = files
    return found


__all__ = ["IgnoreRules", "directories_of", "directories_without_files"]
