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

The reference runs in a long-lived node process per reference and test process
(``ref_runner.mjs`` beside this file, :class:`RefRunner`): it evaluates the reference's own
``replay.mjs`` afresh for each case, with Pi's modules loaded once, which saves node's start-up
and that loading (about 0.6 s of CPU a case; 0.04 s through the runner). ``compare.py``'s
``run`` is hooked for both commands: ours runs as a fork of one process per test process that
has imported pi already (``tests/pi_forks.py``: about 0.3 s of CPU a case saved, the import; the
fork then becomes the command as a new process would). ``PI_CONFORMANCE_REF_PER_CASE=1`` runs
the reference as one process per case, and ``PI_CONFORMANCE_PI_PER_CASE=1`` ours, as
``compare.py`` alone does; ``check_ref_runner.py`` beside this file runs every case both ways
and compares the normalised results and workspaces.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib.util
import io
import json
import locale
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import IO

import pytest

from pi_forks import close_servers, run_pi
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


RUNNER = Path(__file__).resolve().parent / "ref_runner.mjs"
PER_CASE_ENV = "PI_CONFORMANCE_REF_PER_CASE"
"""Set to 1: the reference runs as one node process per case (as ``compare.py`` alone runs it)."""
PI_PER_CASE_ENV = "PI_CONFORMANCE_PI_PER_CASE"
"""Set to 1: ``pi replay`` runs as a new process per case, not as a fork of a process that has
imported pi (``tests/pi_forks.py``)."""


def _runner_key() -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a runner must have been started with to run a case as a new process would: this
    working directory and environment. PYTEST_CURRENT_TEST, which pytest changes for each test,
    is left out: each case gets the whole environment with its request (no module of Pi reads
    that variable when it loads)."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"))
    return os.getcwd(), env


class RefRunnerGone(Exception):
    """The runner ended before it took the case (nothing of the case ran): start another."""


class RefRunner:
    """``node ref_runner.mjs``: runs the reference's ``replay.mjs`` case after case in one node
    process, each case as a process of its own would (see the runner's header). Its answers
    arrive on a pipe of their own; what reaches its real stdout and stderr (node's own fatal
    messages) is kept in files and added to the case's."""

    def __init__(self, node: str, script: str) -> None:
        self.node, self.script = node, script
        self.key = _runner_key()
        self.raw_out: IO[bytes] = tempfile.TemporaryFile()
        self.raw_err: IO[bytes] = tempfile.TemporaryFile()
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [node, str(RUNNER), str(write_end)],
                stdin=subprocess.PIPE,
                stdout=self.raw_out,
                stderr=self.raw_err,
                pass_fds=(write_end,),
                start_new_session=True,
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self.replies = read_end
        self.buffer = b""
        self.raw_seen = (0, 0)

    def _message(self, deadline: float) -> dict[str, object] | None:
        """The next answer line, or None when the runner has ended; TimeoutError at the deadline."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.replies], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, object] = json.loads(line)
        return message

    def _raw(self) -> tuple[bytes, bytes]:
        """What reached the runner's own stdout and stderr since the last case."""
        out = []
        for stream, seen in zip((self.raw_out, self.raw_err), self.raw_seen, strict=True):
            stream.seek(seen)
            out.append(stream.read())
        self.raw_seen = (self.raw_seen[0] + len(out[0]), self.raw_seen[1] + len(out[1]))
        return out[0], out[1]

    def run(self, argv: list[str], timeout: float) -> tuple[int, bytes, bytes]:
        """The case's exit status, stdout and stderr; TimeoutError after ``timeout`` seconds (the
        runner is then gone), RefRunnerGone if the runner ended before it took the case."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdin is not None
        try:
            request = {"argv": argv, "env": dict(os.environ)}
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise RefRunnerGone from None
        out, err = bytearray(), bytearray()
        started = False
        try:
            while (message := self._message(deadline)) is not None:
                if "start" in message:
                    started = True
                elif "o" in message:
                    out += base64.b64decode(str(message["o"]))
                elif "e" in message:
                    err += base64.b64decode(str(message["e"]))
                elif "end" in message:
                    if message.get("last"):
                        self.proc.wait()
                    raw_out, raw_err = self._raw()
                    if message.get("last"):
                        self.close()
                    status = message["end"]
                    assert isinstance(status, int)
                    return status, bytes(out + raw_out), bytes(err + raw_err)
        except TimeoutError:
            self.close()
            raise
        # the runner ended: before the case (start another), or in it, as node would have
        status = self.proc.wait()
        raw_out, raw_err = self._raw()
        self.close()
        if not started:
            raise RefRunnerGone
        return status, bytes(out + raw_out), bytes(err + raw_err)

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        if self.replies >= 0:
            os.close(self.replies)
            self.replies = -1
        self.raw_out.close()
        self.raw_err.close()


_runners: dict[str, RefRunner] = {}
"""The runner of each reference's ``replay.mjs`` in this test process (started on first use)."""


def close_runners() -> None:
    while _runners:
        _runners.popitem()[1].close()


@pytest.fixture(scope="session")
def reference_runners() -> Iterator[None]:
    """Closes this test process's runners after its last test (before ``tests/conftest.py``
    looks for processes left alive: this fixture is set up after that one, so ends first)."""
    yield
    close_runners()
    close_servers()


def _text(data: bytes) -> str:
    """``data`` as ``subprocess.run(..., text=True)`` decodes a process's output."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def run_reference(cmd: list[str], timeout: float) -> tuple[int, str, str]:
    """``cmd`` (``node .../replay.mjs ARGS``) through this process's runner of that replay:
    its exit status, stdout and stderr, or ``subprocess.TimeoutExpired`` as ``subprocess.run``
    raises it. A runner that has ended, or that was started with another ``node``, working
    directory or environment (:func:`_runner_key`), is replaced."""
    node = shutil.which(cmd[0])
    if node is None:
        raise FileNotFoundError(cmd[0])
    script = cmd[1]
    key = _runner_key()
    for _ in range(3):
        runner = _runners.get(script)
        if runner is not None and (runner.node != node or runner.key != key):
            runner.close()
            runner = None
        if runner is None or runner.proc.poll() is not None:
            runner = _runners[script] = RefRunner(node, script)
        try:
            status, out, err = runner.run(cmd[1:], timeout)
        except TimeoutError:
            del _runners[script]
            raise subprocess.TimeoutExpired(cmd, timeout) from None
        except RefRunnerGone:
            del _runners[script]
            continue
        if runner.proc.poll() is not None:
            del _runners[script]
        return status, _text(out), _text(err)
    raise RuntimeError(f"the reference runner for {script} ended three times before a case")


def is_reference(cmd: list[str]) -> bool:
    """``cmd`` is compare.py's run of a reference: ``node <conformance>/<ref>/replay.mjs ...``."""
    return (
        len(cmd) >= 2
        and cmd[0] == "node"
        and Path(cmd[1]).name == "replay.mjs"
        and Path(cmd[1]).parent.parent == CONFORMANCE.resolve()
    )


def runner_hook(
    run: Callable[[list[str], float], tuple[list, str]],
    *,
    references: bool = True,
    ours: bool = True,
) -> Callable[[list[str], float], tuple[list, str]]:
    """compare.py's ``run(cmd, timeout)`` with the reference's command going to its runner
    (``references``), ours (``PI replay ...``) to the fork server of ``PI`` (``ours``), each
    one's stdout parsed as ``run`` parses it, and every other command to ``run``."""

    def hooked(cmd: list[str], timeout: float) -> tuple[list, str]:
        if references and is_reference(cmd):
            _status, out, err = run_reference(cmd, timeout)
        elif ours and cmd[:2] == [str(PI), "replay"]:
            _status, out_bytes, err_bytes = run_pi(cmd, timeout)
            out, err = _text(out_bytes), _text(err_bytes)
        else:
            return run(cmd, timeout)
        return [json.loads(line) for line in out.splitlines() if line.strip()], err

    return hooked


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
    comparer = _comparer()
    references, ours = os.environ.get(PER_CASE_ENV) != "1", os.environ.get(PI_PER_CASE_ENV) != "1"
    if references or ours:
        hook = runner_hook(comparer.run, references=references, ours=ours)
        monkeypatch.setattr(comparer, "run", hook)
    for _attempt in range(2):
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            comparer.main()
        if FD_SHIM_RACE not in output.getvalue():
            break
    assert re.search(r"^1 passed, 0 failed$", output.getvalue(), re.M), output.getvalue()


FD_SHIM_RACE = 'os.replace(name + \\".tmp\\", name)\\nFileNotFoundError'
"""What the reference's result holds when the shared fd stand-in (``ref16/agent/bin/fd``, read
only here) lost its own race: Pi runs a batch's ``find`` calls at once, and two of them over the
same ``.gitignore`` files write the same ``NAME.tmp`` before each renames it to ``NAME``; the
second rename finds no file (CI, ``pp-find-directory-of-ignored-files``). The first run left
``NAME`` in place, so the case is run once more: a fault of the harness, never of pi."""


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


@pytest.mark.usefixtures("reference_runners")
@pytest.mark.parametrize("case_id", [_marked16(case_id) for case_id in CONFORMANCE16_IDS])
def test_conformance16_case(case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case agrees with Pi 1.6.0 (or with the port decision its ``expect`` names)."""
    _compare("ref16", case_id, tmp_path, monkeypatch)


@pytest.mark.usefixtures("reference_runners")
@pytest.mark.parametrize("case_id", [_marked(case_id) for case_id in UNCHANGED_IDS])
def test_conformance_case(case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose behaviour Pi 1.6.0 did not change still agrees with Pi 0.73.1."""
    _compare("ref", case_id, tmp_path, monkeypatch)


@pytest.fixture
def fake_replay(tmp_path: Path) -> Iterator[Callable[[str], list[str]]]:
    """``fake_replay(source)``: a replay script of that source, as ``node SCRIPT`` for
    :func:`run_reference` (its runner closed after the test)."""
    if not NODE22.exists():
        pytest.skip(f"node 22 is not installed ({NODE22}; see .ci/run)")
    scripts: list[str] = []

    def make(source: str) -> list[str]:
        script = tmp_path / f"replay{len(scripts)}.mjs"
        script.write_text(source)
        scripts.append(str(script))
        return [str(NODE22), str(script)]

    yield make
    for script in scripts:
        if script in _runners:
            _runners.pop(script).close()


def test_runner_runs_cases_as_new_processes(fake_replay, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case gets its own argv, environment and exit status, and ends when node would
    exit: after a child it did not wait for has finished."""
    cmd = fake_replay(
        "import { spawn } from 'node:child_process';\n"
        "const [, , name, out] = process.argv;\n"
        "process.stdout.write(`${name} ${process.env.SEEN ?? '-'}\\n`);\n"
        "console.error('to stderr');\n"
        "process.env.SEEN = name;\n"
        "spawn('sh', ['-c', `sleep 0.3; echo ${name} > ${out}`]);\n"
        "process.exitCode = 3;\n"
    )
    out = Path(cmd[1]).parent / "out.txt"
    assert run_reference([*cmd, "one", str(out)], 30) == (3, "one -\n", "to stderr\n")
    assert out.read_text() == "one\n"
    pid = _runners[cmd[1]].proc.pid
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")
    assert run_reference([*cmd, "two", str(out)], 30) == (3, "two -\n", "to stderr\n")
    assert out.read_text() == "two\n"
    assert _runners[cmd[1]].proc.pid == pid


@pytest.mark.parametrize(
    ("source", "status", "stderr"),
    [
        ("process.stdout.write('a\\n'); process.exit(4); process.stdout.write('b\\n');", 4, ""),
        (
            "process.stdout.write('a\\n'); setTimeout(() => { throw new Error('boom'); });",
            1,
            "boom",
        ),
        ("process.stdout.write('a\\n'); Promise.reject(new Error('boom'));", 1, "boom"),
        ("process.stdout.write('a\\n'); throw new Error('boom');", 1, "boom"),
        ("process.stdout.write('a\\n'); process.kill(process.pid, 'SIGKILL');", -9, ""),
    ],
    ids=["exit", "uncaught", "unhandled-rejection", "top-level-throw", "killed"],
)
def test_runner_ends_a_case_as_node_would(
    fake_replay, source: str, status: int, stderr: str
) -> None:
    """process.exit, an uncaught exception, an unhandled rejection and a killed runner end the
    case with node's status and what it wrote before; the next case gets a new runner."""
    cmd = fake_replay(source + "\nawait new Promise((resolve) => setTimeout(resolve, 100));")
    got_status, out, err = run_reference(cmd, 30)
    assert (got_status, out) == (status, "a\n")
    assert stderr in err
    assert cmd[1] not in _runners
    assert run_reference(cmd, 30)[:2] == (status, "a\n")


def test_runner_times_out_as_subprocess_run(fake_replay) -> None:
    """A case past its timeout raises subprocess.TimeoutExpired; the next case gets a new runner."""
    cmd = fake_replay("if (process.argv[2] === 'hang') setInterval(() => {}, 1000);\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_reference([*cmd, "hang"], 1)
    assert cmd[1] not in _runners
    assert run_reference([*cmd, "done"], 30) == (0, "", "")


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
