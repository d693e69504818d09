"""Shared test support: system components that tests need; no third-party plugin autoloads.

A test that needs a system program (node, rg, sshd, bwrap, podman, ...) asks for it with
``require_program("node")``: it skips with the reason when the program is absent, except under
CI (``CI=true``), where ``.ci/run`` installs every component and a missing one fails the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

# Plugins installed in this environment besides pi's own (a tutorial plugin, a plugin being
# written) are not autoloaded by any pi this suite starts, in process or as a subprocess: a test
# sees pi's plugins and the ones it names (issue 31). Tests of autoloading itself unset it.
os.environ["PI_DISABLE_THIRD_PARTY_AUTOLOAD"] = "1"
# Tests assert the exact bytes of piped output: a FORCE_COLOR of the caller's shell would style it.
os.environ.pop("FORCE_COLOR", None)


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


def pytest_configure(config: pytest.Config) -> None:
    uv = os.environ.get("UV")
    if not uv or hasattr(config, "workerinput"):  # not under uv run, or an xdist worker
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


# -- no process outlives the test session --------------------------------------------------
# The pytest process becomes a child subreaper: every process a test starts stays its
# descendant, even when orphaned (a background job of a finished bash command). After the last
# test, any living descendant is a leak: it is killed and the session fails.


def _living_descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            states[int(name)] = fields[0].decode()
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return [pid for pid in found if states.get(pid) not in ("Z", "X")]


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
    leaked = _living_descendants(os.getpid())
    while leaked and time.monotonic() < deadline:  # let shielded cleanups finish
        time.sleep(0.05)
        leaked = _living_descendants(os.getpid())
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
