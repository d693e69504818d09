"""Shared test support: system components that tests need, the parallel run, no leaked
process, no third-party plugin autoloads.

A test that needs a system program (node, rg, sshd, bwrap, podman, ...) asks for it with
``require_program("node")``: it skips with the reason when the program is absent, except under
CI (``CI=true``), where ``.ci/run`` installs every component and a missing one fails the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support import descendants

# Plugins installed in this environment besides pi's own (a tutorial plugin, a plugin being
# written) are not autoloaded by any pi this suite starts, in process or as a subprocess: a test
# sees pi's plugins and the ones it names (issue 31). Tests of autoloading itself unset it.
os.environ["PI_DISABLE_THIRD_PARTY_AUTOLOAD"] = "1"
# Tests assert the exact bytes of piped output: a FORCE_COLOR of the caller's shell would style it.
os.environ.pop("FORCE_COLOR", None)


# -- compiled modules ---------------------------------------------------------------------
# Under PYTHONDONTWRITEBYTECODE (set on the machine the suite is timed on) every Python process
# compiles each module it imports from source, every time: each test process of `pytest -n`
# (collection imports every test module and pi), and each of the thousands of `pi` and Python
# processes the tests start (`pi call read`: 0.8 s of CPU, 0.3 s with the compiled modules).
# The suite writes them as Python does by default (`__pycache__` beside each source, ignored by
# git; .ci/run compiles the environment and the sources at install the same way), for itself
# and every process it starts.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.dont_write_bytecode = False


# -- the dependency groups only tests need -------------------------------------------------
# `docs` (the mkdocs toolchain) and `ray` are not default groups, so `uv run pi ...` in a clone
# never installs them. Under `uv run pytest` (uv sets UV) the suite adds the ones that are
# missing to the environment it runs in, once, before collection: the README's `uv run pytest`
# has everything. Elsewhere the tests that need them skip with the reason (fail under CI).

# Under `uv run`, Ray would start the test cluster's workers with `uv run` again, which syncs the
# default groups only (no Ray); they run in this environment as it is.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

TEST_GROUPS = {"docs": "mkdocs-material", "ray": "ray"}
"""Each group only tests need, and a distribution that shows it is installed."""


def _missing_groups() -> list[str]:
    import importlib.metadata

    missing = []
    for group, distribution in TEST_GROUPS.items():
        try:
            importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            missing.append(group)
    return missing


def _cache_rewritten_test_modules(config: pytest.Config) -> None:
    """Write pytest's cache of every test module with its asserts rewritten, once, before the
    test processes start. Each xdist worker imports every test module to collect the tests and
    would rewrite all of them (about 5 s of CPU each, most of a worker's collection) and, under
    ``PYTHONDONTWRITEBYTECODE`` (set on this machine, and where pytest then writes no cache),
    would do so on every run. The cache is pytest's own (``__pycache__/*.pyc`` with the pytest
    tag, checked by source hash), read by every process; writing it uses pytest's internals, so
    any failure only leaves the workers to rewrite the modules themselves."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
    except (ImportError, KeyError, AttributeError):  # pytest changed, or asserts not rewritten
        return
    root = Path(__file__).resolve().parent
    for source in sorted(root.rglob("*.py")):
        name = source.name
        if not (name.startswith("test_") or name == "conftest.py"):
            continue
        try:
            cache = rewrite.get_cache_dir(source)
            pyc = cache / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is not None:
                continue
            cache.mkdir(exist_ok=True)
            source_hash, code = rewrite._rewrite_test(source, config)
            rewrite._write_pyc(state, code, source_hash, pyc)
        except Exception:  # a syntax error is for the collection to report
            continue


def pytest_configure(config: pytest.Config) -> None:
    # A test run started as a background job of a shell script inherits SIGINT ignored, and so
    # would every pi it starts (pi keeps an ignored SIGINT ignored): the Ctrl-C tests need pi
    # started as a terminal starts it. This process and its children take it back.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):  # an xdist worker
        return
    _cache_rewritten_test_modules(config)
    uv = os.environ.get("UV")
    if not uv:  # not under uv run
        return
    missing = _missing_groups()
    if not missing:
        return
    groups = [word for group in missing for word in ("--group", group)]
    command = [uv, "sync", "--inexact", *groups]
    print(f"tests: adding the groups {', '.join(missing)}: {' '.join(command[1:])}", flush=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if subprocess.run(command, cwd=root, check=False).returncode != 0:
        print("tests: could not add them; the tests that need them skip", flush=True)


def _require_group(group: str) -> None:
    if group in _missing_groups():
        reason = f"the dependency group {group} is not installed (uv sync --group {group})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install it (.ci/run)")
        pytest.skip(reason)


@pytest.fixture
def require_group() -> Callable[[str], None]:
    """``require_group("docs")``: skip (fail under CI) unless that group of
    :data:`TEST_GROUPS` is installed."""
    return _require_group


def _require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        reason = f"{name} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install it (.ci/run)")
        pytest.skip(reason)
    return path


@pytest.fixture
def require_program() -> Callable[[str], str]:
    """``require_program(name) -> absolute path`` or skip (fail under CI) when absent."""
    return _require_program


# -- the parallel run (pytest-xdist) -------------------------------------------------------
# `uv run pytest` runs `-n auto --dist loadgroup` (pyproject.toml): test processes ("workers")
# take tests one by one; tests marked `pytest.mark.xdist_group("NAME")` all go to one worker (a
# module-scoped cluster, a module-scoped virtual environment, tests that look for each other's
# processes). Each worker has its own tmp_path_factory base, session fixtures (sshd, podman
# image and container), and is a subreaper of its own (below). A test never binds a fixed port
# (bind port 0), never writes a fixed name outside tmp_path, and looks for processes only below
# itself (support.descendants(os.getpid())), never among the machine's.


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers of ``-n auto``: twice the cores this process may use (at most 8); many tests wait
    on a subprocess, a timeout or a server, so a core runs two workers.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS=N`` overrides it (xdist reads it: ``None`` passes on);
    ``-n0`` runs the tests in this process."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return min(8, 2 * len(os.sched_getaffinity(0)))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each test marked ``xdist_group("NAME")`` the node id suffix ``@NAME`` by which
    ``--dist loadgroup`` sends a group to one worker. pytest-xdist 3.8 sets it through
    ``item._nodeid``, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386): without
    this the groups are silently spread over the workers. Does nothing once xdist sets it."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})  # fmt: skip
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = type(item._id).parse(item.nodeid + suffix)  # type: ignore[attr-defined]


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """``small_filesystem(size) -> directory``: a real file system of ``size`` bytes (a tmpfs
    mounted below ``tmp_path``, unmounted after the test), to fill up: a full disk is then a
    real ``ENOSPC`` from the kernel, with its short writes. Mounting needs root
    (``CAP_SYS_ADMIN``): skip with the reason without it, fail under CI (which runs as root)."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        target = tmp_path / f"small-fs-{len(mounted)}"
        target.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            reason = f"cannot mount a tmpfs (needs root): {done.stderr.strip()}"
            if os.environ.get("CI") == "true":
                pytest.fail(f"{reason}; CI runs the tests as root")
            pytest.skip(reason)
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "--lazy", str(target)], check=False)


# -- checkpoints stay in the test session's own folder ------------------------------------
# `pi call`, `pi replay` and `pi run` record checkpoints by default, in $XDG_STATE_HOME: every
# test (and every `pi` process it starts) records into a folder of the test session, never
# into the user's ~/.local/state.


@pytest.fixture(scope="session", autouse=True)
def checkpoints_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory):
    """Point ``XDG_STATE_HOME`` (where checkpoints are kept) at a folder of this test session."""
    previous = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if previous is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = previous


# -- no process outlives the test session --------------------------------------------------
# The pytest process becomes a child subreaper: every process a test starts stays its
# descendant, even when orphaned (a background job of a finished bash command). After the last
# test, any living descendant is a leak: it is killed and the session fails.


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """Fail the session if a process started by a test is still alive after the last test."""
    import ctypes
    import signal
    import time

    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    yield
    deadline = time.monotonic() + 5
    leaked = descendants(os.getpid(), living=True)
    while leaked and time.monotonic() < deadline:  # let shielded cleanups finish
        time.sleep(0.05)
        leaked = descendants(os.getpid(), living=True)
    described = []
    for pid in leaked:
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            described.append(f"{pid}: {cmdline}")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    assert not leaked, "processes left alive by the tests:\n" + "\n".join(described)
