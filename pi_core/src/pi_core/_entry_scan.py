"""One scan of the installed distributions' entry points for pi's plugins and pydantic's.

``importlib.metadata.entry_points(group=...)`` builds a distribution object and reads
``entry_points.txt`` through ``pathlib`` for every installed distribution (80 of them in pi's own
environment). Two groups are looked up at every start-up: ``pi`` (the plugin manager) and
``pydantic`` (pydantic's plugin loader, at the first model it builds: 25 million instructions,
2% of ``pi call read``). :func:`scan_entry_points` finds the distributions as
``importlib.metadata`` does (``sys.path`` in order, ``*.dist-info`` / ``*.egg-info`` folders, the
first of each normalised name) with plain ``os`` calls, reads each ``entry_points.txt`` once, and
hands only the files that mention one of the groups to ``importlib.metadata``; where its rules
could differ (another distribution finder on ``sys.meta_path``, a zip or ``.egg`` on
``sys.path``, a name it would read from the metadata, an unreadable file) it returns ``None`` and
the callers let ``importlib.metadata`` do the whole search.

:func:`seed_pydantic_plugins` runs before pi's first model is built (:mod:`pi_core._wire.base`):
when no installed distribution declares a ``pydantic`` entry point it gives pydantic's loader the
empty result its own search would have found, so pydantic skips that search. When one does,
nothing is seeded and pydantic loads its plugins itself, as without pi. The scan's ``pi`` group
is kept for the plugin manager (:func:`take_scanned`), as long as no ``sys.path`` folder changed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import pathlib
import re
import sys

PI_GROUP = "pi"
"""The entry-point group of pi's plugins (``pi_core._plugins.markers.PROJECT_NAME``)."""

PYDANTIC_GROUP = "pydantic"
"""The entry-point group pydantic's plugin loader reads (``pydantic.plugin._loader``)."""

SCAN_VERSIONS = ((3, 11), (3, 13))
"""The Python versions whose ``importlib.metadata`` discovery :func:`scan_entry_points` mirrors."""

_DIST_SUFFIXES = (".dist-info", ".egg-info")
_IGNORED_READ_ERRORS = (
    FileNotFoundError,
    IsADirectoryError,
    KeyError,
    NotADirectoryError,
    PermissionError,
)
"""What ``PathDistribution.read_text`` turns into "no file"."""

_SEPARATORS = re.compile(r"[-_.]+")

Scanned = dict[str, list[importlib.metadata.EntryPoint]]

_kept: tuple[object, Scanned] | None = None
"""The last scan of :func:`seed_pydantic_plugins` and the ``sys.path`` state it saw."""


def normalize(name: str) -> str:
    """``importlib.metadata.Prepared.normalize`` (PEP 503, with underscores)."""
    return _SEPARATORS.sub("-", name).lower().replace("-", "_")


def scan_entry_points(groups: tuple[str, ...]) -> Scanned | None:
    """``{group: importlib.metadata.entry_points(group=group)}`` for each of ``groups`` (the same
    entry points in the same order, each with its ``dist``), or ``None`` where the scan's rules
    could differ from ``importlib.metadata``'s (see the module docstring)."""
    if not SCAN_VERSIONS[0] <= sys.version_info[:2] <= SCAN_VERSIONS[1]:
        return None
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return None
    markers = [f"[{group}]" for group in groups]  # every line that opens a section contains it
    seen: set[str] = set()
    found: Scanned = {group: [] for group in groups}
    for root in sys.path:
        if not isinstance(root, str) or os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root or ".")
        except FileNotFoundError:
            continue
        except OSError:  # a file (perhaps a zip) or an unreadable folder
            return None
        by_name: dict[str, list[str]] = {}  # importlib.metadata's Lookup: by name, in order
        for child in children:
            low = child.lower()
            if not low.endswith(_DIST_SUFFIXES):
                continue
            if not child.endswith(_DIST_SUFFIXES) or child.startswith("."):
                return None  # importlib.metadata would read the name from the metadata
            normalized = normalize(low.rpartition(".")[0].partition("-")[0])
            if not normalized:
                return None
            by_name.setdefault(normalized, []).append(child)
        for normalized, members in by_name.items():
            if normalized in seen:
                continue
            seen.add(normalized)  # the first distribution of a name wins
            try:
                with open(
                    os.path.join(root, members[0], "entry_points.txt"), encoding="utf-8"
                ) as file:
                    text = file.read()
            except _IGNORED_READ_ERRORS:
                continue
            except (OSError, UnicodeDecodeError):
                return None
            if any(marker in text for marker in markers):
                points = importlib.metadata.PathDistribution(
                    pathlib.Path(root, members[0])
                ).entry_points
                for group in groups:
                    found[group].extend(points.select(group=group))
    return found


def _path_state() -> object:
    """``sys.path`` and each folder's modification time: installing or removing a distribution
    in a folder changes the folder's time."""
    state: list[tuple[object, int | None]] = []
    for root in sys.path:
        try:
            state.append((root, os.stat(root or ".").st_mtime_ns))
        except (OSError, TypeError, ValueError):
            state.append((root, None))
    return tuple(state)


def take_scanned(group: str) -> list[importlib.metadata.EntryPoint] | None:
    """The entry points of ``group`` found by :func:`seed_pydantic_plugins`'s scan, once, if
    ``sys.path`` and its folders are as they were then; ``None`` otherwise (scan again)."""
    global _kept
    kept, _kept = _kept, None
    if kept is None or group not in kept[1] or kept[0] != _path_state():
        return None
    return kept[1][group]


def seed_pydantic_plugins() -> bool:
    """Give pydantic's plugin loader the empty result of its search when no installed
    distribution declares a ``pydantic`` entry point (``True``); leave it alone (``False``) when
    one does, when the scan cannot be sure, when the loader has searched already, or when it no
    longer keeps its result where this looks for it."""
    global _kept
    from pydantic.plugin import _loader

    if getattr(_loader, "_plugins", False) is not None or not callable(
        getattr(_loader, "get_plugins", None)
    ):
        return False
    state = _path_state()
    scanned = scan_entry_points((PI_GROUP, PYDANTIC_GROUP))
    if scanned is None:
        return False
    _kept = (state, scanned)
    if scanned[PYDANTIC_GROUP]:
        return False
    _loader._plugins = {}
    return True
