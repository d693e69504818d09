"""The embedded default of ``pi run``: without ``--model``, ``pi run`` plays
``docs/examples/demo-session.jsonl`` (``scripted:``) in a copy of the example project
``docs/examples/demo/`` -- a fresh temporary folder, or ``--cwd DIR`` (the project's files are
copied into it; the demo never overwrites a file: when one it would copy exists already, nothing
is copied and it is a usage error).

The session runs the project's test (``python3 test_stats.py``: two failures), greps for
``def mean`` and reads ``stats.py``, fixes ``mean`` with an edit and runs the test again.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pi_core._cli.parser import UsageError

DEMO_SESSION = "demo-session.jsonl"
DEMO_PROJECT = "demo"
DEMO_PROMPT = "Fix the failing test in this project."
"""The prompt ``pi run`` sends when it is given none (only with the embedded default)."""


def examples_dir() -> Path | None:
    """``docs/examples`` of the checkout pi runs from (found upward from this file), or
    ``None`` when pi is installed without it."""
    for folder in Path(__file__).resolve().parents:
        candidate = folder / "docs" / "examples"
        if (candidate / DEMO_SESSION).is_file() and (candidate / DEMO_PROJECT).is_dir():
            return candidate
    return None


def demo_files() -> tuple[Path, Path]:
    """``(session file, project folder)`` of the demo; a :class:`UsageError` when missing."""
    found = examples_dir()
    if found is None:
        raise UsageError(
            "the embedded demo (docs/examples/demo-session.jsonl) is not installed; "
            "pass --model PROVIDER:MODEL"
        )
    return found / DEMO_SESSION, found / DEMO_PROJECT


def demo_target(project: Path, cwd: str | None) -> Path | None:
    """Check ``--cwd`` for the demo before anything is written: ``None`` (a new temporary
    folder will be used) or the folder. A :class:`UsageError` when ``cwd`` is not a folder or
    already holds a file the demo would copy (the first one is named)."""
    if cwd is None:
        return None
    target = Path(cwd)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    for source in sorted(project.rglob("*")):
        if "__pycache__" in source.parts or source.is_dir():
            continue
        existing = target / source.relative_to(project)
        if existing.exists() or existing.is_symlink():
            raise UsageError(
                f"--cwd {cwd}: {existing.relative_to(target)} already exists; "
                "the demo does not overwrite files (use an empty or new folder)"
            )
    return target


def prepare_workspace(project: Path, target: Path | None) -> str:
    """Copy ``project`` into ``target`` (made if missing; checked by :func:`demo_target`) or
    into a new temporary folder (``pi-demo-XXXX``); returns the folder's absolute path.
    ``__pycache__`` is not copied; a folder pi cannot write is a :class:`UsageError`."""
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="pi-demo-"))
    try:
        shutil.copytree(
            project, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    except (OSError, shutil.Error) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise UsageError(f"--cwd {target}: cannot copy the demo: {reason}") from None
    return str(target.resolve())


__all__ = ["DEMO_PROMPT", "demo_files", "demo_target", "examples_dir", "prepare_workspace"]
