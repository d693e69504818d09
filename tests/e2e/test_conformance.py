"""Side by side with the reference Pi (``../shared/conformance``) and the bug-report cases
(``../shared/cases``), through the real ``pi replay`` command.

The reference is Pi 1.6.0 (``compare.py --ref ref16``) over ``cases/`` and ``cases16/``, and over
this repository's own side-by-side cases (``cases16_pi/`` beside this file: one folder per rule,
with Pi 1.6.0's own test files ported as cases in ``pi-tests/``); Pi
0.73.1 (``--ref ref``) still judges the ``cases/`` whose behaviour 1.6.0 did not change
(:data:`CHANGED_IN_16` lists the others, with the section of ``pi-1.6-delta.md`` that changed
them). Each case is one test, so a regression names its case: one run of the comparer over
that case alone (a real ``pi replay`` process and a real run of the npm reference), which lets
``pytest -n`` spread the cases over its workers. Needs node and both reference installs
(``.ci/run`` provides them under CI); both run on node 22, as Pi 1.6.0's ``engines`` field asks.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from support import NODE22

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"
OWN16 = Path(__file__).resolve().parent / "cases16_pi"
PI = Path(sys.executable).parent / "pi"
OURS = f"{PI} replay {{file}} --cwd {{cwd}} --json"
REF_NODES = {"ref": NODE22, "ref16": NODE22}
"""The node each reference runs on: node 22, which both ``engines`` fields admit (Pi 0.73.1:
node >= 20.6.0, Pi 1.6.0: node >= 22.19.0); ``None`` would be the first ``node`` on PATH."""
REF_PACKAGES = {
    "ref": Path.home() / ".cache/pi-ref/node_modules/@mariozechner/pi-coding-agent",
    "ref16": Path.home() / ".cache/pi-ref16/node_modules/@earendil-works/pi-coding-agent",
}
pytestmark = pytest.mark.slow


CHANGED_IN_16: dict[str, str] = {
    # cases/ whose 0.73.1 output Pi 1.6.0 changed: judged by the 1.6.0 run only
    "find-limit-notice": "§12.7 find: the limit notice needs a result past the limit",
    "loop-parallel-immediate-errors": "§11 pi-schema validation texts; §7 structuredContent",
    "loop-sequential-messages": "§12.3 write: 'Successfully wrote to <path>'",
    "loop-validation-errors": "§11 pi-schema validation texts ('missing', 'expected T, got U')",
    "write-new-and-nested": "§12.3 write: 'Successfully wrote to <path>'",
    "write-overwrite": "§12.3 write: 'Successfully wrote to <path>'",
    "write-special-space-path": "§12.3 write: 'Successfully wrote to <path>'",
    "write-unicode-byte-count": "§12.3 write: 'Successfully wrote to <path>'",
}

CONFLICTS_16: dict[str, str] = {
    # cases the 1.6.0 run cannot pass while an override or a port decision stands (none now)
}

SUPERSEDED_OVERRIDES: dict[str, str] = {
    # cases/ whose ``expect`` override encodes what issue 27 replaced with Pi 1.6's behaviour:
    # both runs fail until ../shared/conformance drops the override (or amends its text)
    "edit-edits-invalid-json-string": (
        "issue 27: Pi 1.6's coercion wraps the string into an array: "
        "'edits.0: expected object, got string' (the override says 'edits: must be array')"
    ),
    "loop-null-and-empty-not-coerced": (
        "issue 27: Pi 1.6's coercion drops an optional null and reads '' as 0 "
        "(the override says 'must be number')"
    ),
    "loop-path-number-rejected": (
        "issue 27: Pi 1.6's coercion reads 123 as '123' (the override says 'must be string')"
    ),
    "edit-no-partial-application": (
        "issue 27: the multi-edit not-found text is 1.6.0's 'The oldText must match' "
        "(the override says 'The old text must match'; the excerpt after it stays)"
    ),
}


def _ids(folder: Path, pattern: str) -> list[str]:
    if pattern.endswith(".jsonl"):
        path = folder / pattern
        if not path.exists():
            return []
        return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]
    return sorted(p.stem for p in folder.rglob(pattern))


CONFORMANCE_IDS = _ids(CONFORMANCE / "cases", "*.json")
OWN16_IDS = _ids(OWN16, "*.json")
CONFORMANCE16_IDS = CONFORMANCE_IDS + _ids(CONFORMANCE / "cases16", "*.json") + OWN16_IDS
UNCHANGED_IDS = [case_id for case_id in CONFORMANCE_IDS if case_id not in CHANGED_IN_16]
CASE_IDS = _ids(SHARED / "cases", "cases.jsonl")


def _skip_without_components(ref: str) -> None:
    if not (CONFORMANCE / "compare.py").exists():
        pytest.skip("../shared/conformance is not beside this checkout")
    for program in ("node", "rg", "fd"):
        if shutil.which(program) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{program} is not installed, and CI must install it (.ci/run)")
            pytest.skip(f"{program} is not installed")
    node = REF_NODES[ref]
    if node is not None and not node.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"node 22 is not installed ({node}), and CI must install it (.ci/run)")
        pytest.skip(f"node 22 is not installed ({node}; see .ci/run)")
    if not REF_PACKAGES[ref].exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the reference {ref} is not installed, and CI must install it (.ci/run)")
        pytest.skip(f"reference Pi not installed ({REF_PACKAGES[ref]}; see .ci/run)")


@functools.cache
def _comparer() -> ModuleType:
    """``compare.py`` loaded as a module, once per test process: each case calls its ``main``
    here rather than in a new interpreter (the reference and ``pi replay`` still run as their
    own processes, as on the command line)."""
    spec = importlib.util.spec_from_file_location(
        "pi_conformance_compare", CONFORMANCE / "compare.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compare(ref: str, case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``compare.py --ref REF -v`` over a folder holding this case alone (a copy of its file):
    the case passes, and compare.py ran exactly it. One case per test lets ``pytest -n`` spread
    the cases over its workers (compare.py runs the cases of one call one after another)."""
    _skip_without_components(ref)
    folders = (CONFORMANCE / "cases", CONFORMANCE / "cases16", OWN16)
    source = next(p for folder in folders for p in folder.rglob(f"{case_id}.json"))
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / source.name).write_bytes(source.read_bytes())
    # the reference must find the system rg and fd, not this environment's ripgrep wheel
    # (``uv run`` puts the venv's bin first on PATH), and compare.py runs the first ``node`` on
    # PATH; ours is called by absolute path
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    node = REF_NODES[ref]
    if node is not None:
        path = os.pathsep.join((str(node.parent), path))
    monkeypatch.setenv("PATH", path)
    monkeypatch.chdir(CONFORMANCE)
    monkeypatch.setattr(
        sys, "argv",
        ["compare.py", "--ref", ref, "--ours", OURS, "--timeout", "120", "-v", str(folder)],
    )  # fmt: skip
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        _comparer().main()
    assert re.search(r"^1 passed, 0 failed$", output.getvalue(), re.M), output.getvalue()


@pytest.fixture(scope="session")
def startup_allowance() -> str:
    """``run.py``'s start-up allowance for our command, measured once per test process by its
    own ``measure_startup`` (each case then runs alone, and ``--startup`` passes it on)."""
    if not (SHARED / "cases" / "run.py").exists():
        pytest.skip("../shared/cases is not beside this checkout")
    code = "import sys, run; print(run.measure_startup(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, OURS],
        cwd=SHARED / "cases",
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return proc.stdout.strip()


def _marked16(case_id: str) -> object:
    reason = CONFLICTS_16.get(case_id) or SUPERSEDED_OVERRIDES.get(case_id)
    if reason is not None:
        return pytest.param(case_id, marks=pytest.mark.xfail(reason=reason))
    return case_id


def _marked(case_id: str) -> object:
    if case_id in SUPERSEDED_OVERRIDES:
        reason = SUPERSEDED_OVERRIDES[case_id]
        return pytest.param(case_id, marks=pytest.mark.xfail(reason=reason))
    return case_id


@pytest.mark.parametrize("case_id", [_marked16(case_id) for case_id in CONFORMANCE16_IDS])
def test_conformance16_case(case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case agrees with Pi 1.6.0 (or with the port decision its ``expect`` names)."""
    _compare("ref16", case_id, tmp_path, monkeypatch)


@pytest.mark.parametrize("case_id", [_marked(case_id) for case_id in UNCHANGED_IDS])
def test_conformance_case(case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose behaviour Pi 1.6.0 did not change still agrees with Pi 0.73.1."""
    _compare("ref", case_id, tmp_path, monkeypatch)


def test_changed_cases_exist() -> None:
    """Every case named in the lists above is a case (no stale names)."""
    if not CONFORMANCE_IDS:
        pytest.skip("../shared/conformance is not beside this checkout")
    assert set(CHANGED_IN_16) <= set(CONFORMANCE_IDS)
    assert set(CONFLICTS_16) <= set(CONFORMANCE16_IDS)
    assert set(SUPERSEDED_OVERRIDES) <= set(CONFORMANCE_IDS)
    assert set(CASES_CHANGED_IN_16) <= set(CASE_IDS)


CASES_CHANGED_IN_16: dict[str, str] = {
    # bug-report cases whose expected text is the 0.73.1 one that Pi 1.6.0 changed (none now)
}


def _marked_case(case_id: str) -> object:
    if case_id in CASES_CHANGED_IN_16:
        reason = CASES_CHANGED_IN_16[case_id]
        return pytest.param(case_id, marks=pytest.mark.xfail(reason=reason))
    return case_id


@pytest.mark.parametrize("case_id", [_marked_case(case_id) for case_id in CASE_IDS])
def test_bug_report_case(case_id: str, startup_allowance: str, tmp_path: Path) -> None:
    """``run.py -v`` over a file holding this case alone: it passes, and run.py ran exactly it."""
    line = next(
        line
        for line in (SHARED / "cases" / "cases.jsonl").read_text().splitlines()
        if line.strip() and json.loads(line)["id"] == case_id
    )
    (tmp_path / "case.jsonl").write_text(line + "\n")
    proc = subprocess.run(
        [sys.executable, "run.py", "--cmd", OURS, "-v", "--cases", str(tmp_path / "case.jsonl"),
         "--startup", startup_allowance],
        cwd=SHARED / "cases",
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert re.search(r"^1 passed, 0 failed$", proc.stdout, re.M), proc.stdout + proc.stderr
