"""The documentation builds with ``mkdocs build --strict`` (issue 2, item 16), and its hook
reference covers every hook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pi_core import hookspecs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_docs_build_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "site" / "reference" / "hooks" / "index.html").read_text()
    for name in hookspecs.HOOK_CALL_MODES:
        assert f'id="pi_core.hookspecs.{name}"' in page, name
    tutorial = (tmp_path / "site" / "tutorial" / "first-plugin" / "index.html").read_text()
    assert "pi_before_tool_call" in tutorial
