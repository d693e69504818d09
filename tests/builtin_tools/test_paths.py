"""Path resolution: spec §3, scenarios §8.4 (61–65), port decision 9, case c29."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from pi_builtin_tools.files.local import LocalFileOperations
from pi_core._backend_kit.paths import (
    expand_path,
    normalize_unicode_spaces,
    path_candidates,
    resolve_existing_path,
    resolve_to_cwd,
)

OPS = LocalFileOperations()


def test_expand_path_at_and_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/tester")
    assert expand_path("@a.txt") == "a.txt"
    assert expand_path("@@a.txt") == "@a.txt"
    assert expand_path("~") == "/home/tester"
    assert expand_path("~/x/y") == "/home/tester/x/y"
    assert expand_path("~user/x") == "~user/x"
    assert expand_path("file:///tmp/a%20b.txt") == "/tmp/a b.txt"


def test_special_spaces() -> None:
    spaces = (
        "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
    )
    assert normalize_unicode_spaces(f"a{spaces}b") == "a" + " " * len(spaces) + "b"
    assert expand_path("nb\u00a0space.txt") == "nb space.txt"
    assert expand_path("nb\u00a0space.txt", normalize_spaces=False) == "nb\u00a0space.txt"


def test_resolve_to_cwd_normalises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/tester")
    assert resolve_to_cwd("a/../b.txt", "/work/ws") == "/work/ws/b.txt"
    assert resolve_to_cwd("dir/", "/work/ws") == "/work/ws/dir"
    assert resolve_to_cwd("/abs//x/./y", "/work/ws") == "/abs/x/y"
    assert resolve_to_cwd("~/x", "/work/ws") == "/home/tester/x"
    assert resolve_to_cwd("@notes.txt", "/work/ws") == "/work/ws/notes.txt"
    assert resolve_to_cwd(".", "/work/ws") == "/work/ws"


def test_candidates_order() -> None:
    """Exact first, then spaces, then the §3.2 variants in order; no duplicates."""
    assert path_candidates("Capture d'e\u0301cran AM.png", "/w") == [
        "/w/Capture d'e\u0301cran AM.png",
        "/w/Capture d'e\u0301cran\u202fAM.png",
        "/w/Capture d\u2019e\u0301cran AM.png",
    ]
    assert path_candidates("Capture d'écran\u00a0x", "/w") == [
        "/w/Capture d'écran\u00a0x",
        "/w/Capture d'écran x",
        "/w/Capture d'e\u0301cran x",
        "/w/Capture d\u2019écran x",
        "/w/Capture d\u2019e\u0301cran x",
    ]
    assert path_candidates("shot 1 AM.png", "/w") == [
        "/w/shot 1 AM.png",
        "/w/shot 1\u202fAM.png",
    ]
    assert path_candidates("x\u00a0y", "/w", for_read=False) == ["/w/x\u00a0y", "/w/x y"]


async def test_at_prefix(tmp_path: Path) -> None:
    """Scenario 61."""
    (tmp_path / "a.txt").write_text("A")
    assert await resolve_existing_path("@a.txt", str(tmp_path), OPS) == str(tmp_path / "a.txt")


async def test_nbsp_resolves_to_space(tmp_path: Path) -> None:
    """Scenario 62."""
    (tmp_path / "nb space.txt").write_text("x")
    found = await resolve_existing_path("nb\u00a0space.txt", str(tmp_path), OPS)
    assert found == str(tmp_path / "nb space.txt")
    for_write = await resolve_existing_path("nb\u00a0space.txt", str(tmp_path), OPS, for_read=False)
    assert for_write == str(tmp_path / "nb space.txt")


async def test_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario 63."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "x").write_text("x")
    assert await resolve_existing_path("~/x", "/", OPS) == str(tmp_path / "x")


async def test_macos_screenshot_variant(tmp_path: Path) -> None:
    """Scenario 64 and case c29 step 1."""
    name = "Screenshot 2024-01-01 at 10.00.00\u202fAM.png"
    (tmp_path / name).write_text("s")
    found = await resolve_existing_path(
        "Screenshot 2024-01-01 at 10.00.00 AM.png", str(tmp_path), OPS
    )
    assert found == str(tmp_path / name)
    lower = "shot 9.41.12\u202fpm.txt"
    (tmp_path / lower).write_text("s")
    assert await resolve_existing_path("shot 9.41.12 pm.txt", str(tmp_path), OPS) == str(
        tmp_path / lower
    )


async def test_nfd_and_curly_apostrophe(tmp_path: Path) -> None:
    """Scenario 65."""
    name = unicodedata.normalize("NFD", "Capture d\u2019écran.txt")
    (tmp_path / name).write_text("c")
    found = await resolve_existing_path("Capture d'écran.txt", str(tmp_path), OPS)
    assert found == str(tmp_path / name)
    nfd_only = unicodedata.normalize("NFD", "café.txt")
    (tmp_path / nfd_only).write_text("c")
    assert await resolve_existing_path("café.txt", str(tmp_path), OPS) == str(tmp_path / nfd_only)
    curly = "it\u2019s.txt"
    (tmp_path / curly).write_text("c")
    assert await resolve_existing_path("it's.txt", str(tmp_path), OPS) == str(tmp_path / curly)


async def test_exact_name_with_special_space_found_first(tmp_path: Path) -> None:
    """Decision 9 / case c29 step 2: a name that really holds U+202F or U+00A0 is found as given,
    even when the space-normalised twin exists too."""
    narrow = "Screenshot at 3.00.00\u202fp.m..txt"
    (tmp_path / narrow).write_text("localized")
    assert await resolve_existing_path(narrow, str(tmp_path), OPS) == str(tmp_path / narrow)
    (tmp_path / "a\u00a0b.txt").write_text("nbsp")
    (tmp_path / "a b.txt").write_text("space")
    assert await resolve_existing_path("a\u00a0b.txt", str(tmp_path), OPS) == str(
        tmp_path / "a\u00a0b.txt"
    )
    assert await resolve_existing_path("a\u00a0b.txt", str(tmp_path), OPS, for_read=False) == str(
        tmp_path / "a\u00a0b.txt"
    )


async def test_missing_gives_space_normalised_path(tmp_path: Path) -> None:
    """No candidate exists: the space-normalised path (a new file for write, the error path)."""
    assert await resolve_existing_path("new\u3000file.txt", str(tmp_path), OPS, for_read=False) == (
        str(tmp_path / "new file.txt")
    )
    assert await resolve_existing_path("missing it's AM.txt", str(tmp_path), OPS) == str(
        tmp_path / "missing it's AM.txt"
    )


async def test_variants_not_tried_for_write(tmp_path: Path) -> None:
    (tmp_path / "it\u2019s.txt").write_text("c")
    assert await resolve_existing_path("it's.txt", str(tmp_path), OPS, for_read=False) == str(
        tmp_path / "it's.txt"
    )


async def test_dangling_symlink_is_not_existing(tmp_path: Path) -> None:
    os.symlink(tmp_path / "nowhere", tmp_path / "link")
    assert await resolve_existing_path("link", str(tmp_path), OPS) == str(tmp_path / "link")
