"""Side by side with the reference Pi (``../shared/conformance``) and the bug-report cases
(``../shared/cases``), through the real ``pi replay`` command.

The comparers run once per session (each case is a real ``pi replay`` process and, for
conformance, a real run of the npm reference); each case is then one test, so a regression names
its case. Needs node and the reference install (``.ci/run`` provides both under CI).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
PI = Path(sys.executable).parent / "pi"
OURS = f"{PI} replay {{file}} --cwd {{cwd}} --json"
REF_PACKAGE = Path.home() / ".cache/pi-ref/node_modules/@mariozechner/pi-coding-agent"
pytestmark = pytest.mark.slow


def _ids(folder: Path, pattern: str) -> list[str]:
    if pattern.endswith(".jsonl"):
        path = folder / pattern
        if not path.exists():
            return []
        return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]
    return sorted(p.stem for p in folder.glob(pattern))


CONFORMANCE_IDS = _ids(SHARED / "conformance" / "cases", "*.json")
CASE_IDS = _ids(SHARED / "cases", "cases.jsonl")


def _failures(output: str, prefix: str) -> dict[str, str]:
    failed: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(rf"{prefix}\s*(\S+?):?\s+(.*)$", line)
        if match:
            failed[match.group(1)] = match.group(2)
    return failed


@pytest.fixture(scope="session")
def conformance_failures() -> dict[str, str]:
    if not (SHARED / "conformance" / "compare.py").exists():
        pytest.skip("../shared/conformance is not beside this checkout")
    import shutil

    for program in ("node", "rg", "fd"):
        if shutil.which(program) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{program} is not installed, and CI must install it (.ci/run)")
            pytest.skip(f"{program} is not installed")
    if not REF_PACKAGE.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("the reference Pi is not installed, and CI must install it (.ci/run)")
        pytest.skip("reference Pi not installed (npm install --prefix ~/.cache/pi-ref ...)")
    # the reference must find the system rg and fd, not this environment's ripgrep wheel
    # (``uv run`` puts the venv's bin first on PATH); ours is called by absolute path
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    proc = subprocess.run(
        [sys.executable, "compare.py", "--ours", OURS, "--timeout", "120"],
        cwd=SHARED / "conformance",
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert re.search(r"^\d+ passed, \d+ failed$", proc.stdout, re.M), proc.stdout + proc.stderr
    return _failures(proc.stdout, "FAIL")


@pytest.fixture(scope="session")
def case_failures() -> dict[str, str]:
    if not (SHARED / "cases" / "run.py").exists():
        pytest.skip("../shared/cases is not beside this checkout")
    proc = subprocess.run(
        [sys.executable, "run.py", "--cmd", OURS],
        cwd=SHARED / "cases",
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert re.search(r"^\d+ passed, \d+ failed$", proc.stdout, re.M), proc.stdout + proc.stderr
    return _failures(proc.stdout, "FAIL")


@pytest.mark.parametrize("case_id", CONFORMANCE_IDS)
def test_conformance_case(case_id: str, conformance_failures: dict[str, str]) -> None:
    assert case_id not in conformance_failures, conformance_failures.get(case_id)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_bug_report_case(case_id: str, case_failures: dict[str, str]) -> None:
    assert case_id not in case_failures, case_failures.get(case_id)
