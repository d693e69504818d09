"""The embedded default of ``pi run`` (issue 5 item 6): without ``--model``, ``pi run`` plays
``docs/examples/demo-session.jsonl`` (``scripted:``) in a copy of the example project
``docs/examples/demo/`` -- a fresh temporary folder, or ``--cwd DIR`` (the project's files are
copied into it, replacing files of the same name).

The session runs the project's test (``python3 test_stats.py``: two failures), greps for
``def mean`` and reads ``stats.py``, fixes ``mean`` with an edit and runs the test again.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pi_core.cli.parser import UsageError

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


def prepare_workspace(project: Path, cwd: str | None) -> str:
    """Copy ``project`` into ``cwd`` (made if missing) or into a new temporary folder
    (``pi-demo-XXXX``); returns the folder's absolute path. ``__pycache__`` is not copied."""
    target = Path(cwd) if cwd is not None else Path(tempfile.mkdtemp(prefix="pi-demo-"))
    if target.exists() and not target.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    shutil.copytree(
        project, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    return str(target.resolve())


__all__ = ["DEMO_PROMPT", "demo_files", "examples_dir", "prepare_workspace"]
