"""The plugin manager's entry-point discovery finds exactly what ``importlib.metadata`` finds.

``installed_entry_points()`` scans ``sys.path`` with plain ``os`` calls (start-up,
docs/explanation/performance.md, P7) and must give the same entry points of group ``pi``, in the
same order, with the same distribution, as ``importlib.metadata.entry_points(group="pi")``;
where its rules could differ it gives up (``None``) and ``importlib.metadata`` does the search.
The same scan, made once before pi's first model is built, answers pydantic's plugin search
(group ``pydantic``) when no distribution declares one (``pi_core._entry_scan``).
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import pi_core._entry_scan as entry_scan
from pi_core._entry_scan import scan_entry_points
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


def test_one_scan_finds_each_group_as_importlib_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist(tmp_path, "alpha-1.dist-info", "[pi]\na = mod_a\n[pydantic]\np = mod_p:plugin\n")
    dist(tmp_path, "beta-1.dist-info", "[pydantic]\nq = mod_q:plugin\n")
    dist(tmp_path, "gamma-1.dist-info", "[console_scripts]\ng = mod_g\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    scanned = scan_entry_points(("pi", "pydantic"))
    assert scanned is not None
    for group in ("pi", "pydantic"):
        assert described(scanned[group]) == described(
            list(importlib.metadata.entry_points(group=group))
        )
    assert sorted(ep.value for ep in scanned["pydantic"]) == ["mod_p:plugin", "mod_q:plugin"]


def test_the_kept_scan_is_given_once_and_not_after_a_folder_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist(tmp_path, "alpha-1.dist-info", "[pi]\na = mod_a\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    scanned = scan_entry_points(("pi", "pydantic"))
    assert scanned is not None
    monkeypatch.setattr(entry_scan, "_kept", (entry_scan._path_state(), scanned))
    assert [ep.value for ep in entry_scan.take_scanned("pi") or []] == ["mod_a"]
    assert entry_scan.take_scanned("pi") is None  # once
    monkeypatch.setattr(entry_scan, "_kept", (entry_scan._path_state(), scanned))
    os.utime(tmp_path, ns=(0, 0))  # as installing or removing a distribution there would
    assert entry_scan.take_scanned("pi") is None
    assert [ep.value for ep in installed_entry_points()] == ["mod_a"]


SEED_PROBE = """
import importlib.metadata, sys
searches = []
search = importlib.metadata.entry_points
def entry_points(**kwargs):
    searches.append(kwargs)
    return search(**kwargs)
importlib.metadata.entry_points = entry_points
sys.argv = ["pi", *sys.argv[1:]]
import _pi_entry
try:
    _pi_entry.main()
finally:
    from pydantic.plugin import _loader
    print("SEARCHES", searches, sorted(_loader._plugins or ()), file=sys.stderr)
"""


def run_seed_probe(tmp_path: Path, pythonpath: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    argv = ["call", "read", '{"path": "six.txt"}', "--cwd", str(tmp_path)]
    return subprocess.run(
        [sys.executable, "-c", SEED_PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )


def test_pi_call_read_does_not_search_for_pydantic_plugins_when_none_is_installed(
    tmp_path: Path,
) -> None:
    """The scan made before pi's first model finds no ``pydantic`` entry point: pydantic's
    loader gets its empty result and never runs ``importlib.metadata.entry_points``."""
    proc = run_seed_probe(tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    assert proc.stderr.splitlines()[-1] == "SEARCHES [] []"


def test_an_installed_pydantic_plugin_is_loaded_and_used_as_without_pi(tmp_path: Path) -> None:
    """A distribution that declares a ``pydantic`` entry point: pydantic searches and loads its
    plugins itself, and the plugin sees pi's models being built."""
    site = tmp_path / "site"
    dist(site, "watcher-1.0.dist-info", "[pydantic]\nwatcher = pydantic_watcher:plugin\n")
    (site / "pydantic_watcher.py").write_text(
        "import sys\n"
        "class Plugin:\n"
        "    def new_schema_validator(self, schema, schema_type, schema_type_path, *rest):\n"
        "        if schema_type_path.name == 'ToolResultMessage':\n"
        "            print('WATCHED ToolResultMessage', file=sys.stderr)\n"
        "        return None, None, None\n"
        "plugin = Plugin()\n"
    )
    proc = run_seed_probe(tmp_path, str(site))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    assert "WATCHED ToolResultMessage" in proc.stderr.splitlines()
    assert proc.stderr.splitlines()[-1] == (
        "SEARCHES [{'group': 'pydantic'}] ['pydantic_watcher:plugin']"
    )
