"""The plugin manager's entry-point discovery finds exactly what ``importlib.metadata`` finds.

``installed_entry_points()`` scans ``sys.path`` with plain ``os`` calls (start-up,
docs/explanation/performance.md, P7) and must give the same entry points of group ``pi``, in the
same order, with the same distribution, as ``importlib.metadata.entry_points(group="pi")``;
where its rules could differ it gives up (``None``) and ``importlib.metadata`` does the search.
"""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pi_core._plugins.manager import _scan_entry_points, installed_entry_points


def described(entry_points: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(ep.name, ep.value, ep.group, str(ep.dist._path)) for ep in entry_points]


def reference() -> list[tuple[str, str, str, str]]:
    return described(list(importlib.metadata.entry_points(group="pi")))


def dist(folder: Path, name: str, entry_points: str | bytes | None = None) -> Path:
    path = folder / name
    path.mkdir(parents=True)
    (path / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.split('-')[0]}\n")
    if isinstance(entry_points, bytes):
        (path / "entry_points.txt").write_bytes(entry_points)
    elif entry_points is not None:
        (path / "entry_points.txt").write_text(entry_points)
    return path


def test_the_installed_plugins_are_found_as_importlib_finds_them() -> None:
    scanned = _scan_entry_points()
    assert scanned is not None
    assert described(scanned) == reference()
    assert {ep.name for ep in scanned} >= {"builtin_tools", "sandbox"}


def test_order_shadowing_sections_and_names_match_importlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "alpha-1.0.dist-info", "[pi]\na = mod_a\n")
    dist(first, "beta.egg-info", "[[pi]]\nb = mod_b:obj\n")
    dist(first, "gamma-2.dist-info", "[console_scripts]\nx = y\n")
    dist(first, "delta-1.dist-info")
    dist(first, "Alpha_Two-1.dist-info", "# a comment\n[pi]\n  two = mod_two [extra]\n\n[x]\nz=1\n")
    dist(second, "alpha-2.0.dist-info", "[pi]\na = shadowed\n")  # alpha is found first
    dist(second, "epsilon-1.dist-info", "[pi]\ne = mod_e\na = mod_a2\n")
    dist(second, "zeta-1.dist-info", "[ pi ]\nz = not_pi\n")  # a section named " pi "
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])

    scanned = _scan_entry_points()
    assert scanned is not None
    assert described(scanned) == reference()
    # listdir order within a folder; the first folder's distributions first; alpha-2.0 shadowed
    assert sorted(ep.value for ep in scanned[:3]) == ["mod_a", "mod_b:obj", "mod_two [extra]"]
    assert [ep.value for ep in scanned[3:]] == ["mod_e", "mod_a2"]
    assert described(installed_entry_points()) == described(scanned)


@pytest.mark.parametrize("case", ["upper-case suffix", "egg", "zip", "finder", "leading dot"])
def test_where_the_rules_could_differ_importlib_does_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    folder = tmp_path / "site"
    dist(folder, "alpha-1.0.dist-info", "[pi]\na = mod_a\n")
    path = [str(folder)]
    if case == "upper-case suffix":
        dist(folder, "Beta-1.DIST-INFO", "[pi]\nb = mod_b\n")
    elif case == "egg":
        egg = tmp_path / "thing-1.0.egg"
        dist(egg, "EGG-INFO", "[pi]\nc = mod_c\n")
        path.append(str(egg))
    elif case == "zip":
        archive = tmp_path / "bundle.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("zipped-1.dist-info/entry_points.txt", "[pi]\nz = mod_z\n")
            zipped.writestr("zipped-1.dist-info/METADATA", "Name: zipped\n")
        path.append(str(archive))
    elif case == "finder":

        class Finder:
            @staticmethod
            def find_distributions(*args: Any, **kwargs: Any) -> list[Any]:
                return []

            @staticmethod
            def find_spec(*args: Any, **kwargs: Any) -> None:
                return None

        monkeypatch.setattr(sys, "meta_path", [Finder, *sys.meta_path])
    else:
        dist(folder, ".hidden.dist-info", "[pi]\nh = mod_h\n")
    monkeypatch.setattr(sys, "path", path)

    assert _scan_entry_points() is None
    assert described(installed_entry_points()) == reference()


def test_an_entry_points_file_that_is_not_utf8_fails_as_in_importlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist(tmp_path, "bad-1.dist-info", b"[pi]\nb = \xff\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert _scan_entry_points() is None
    with pytest.raises(UnicodeDecodeError):
        installed_entry_points()
    with pytest.raises(UnicodeDecodeError):
        reference()
