"""Issue 10 item 9: fault injection with exact outcomes.

Each test breaks something real under a real ``pi`` process and asserts the exact text the
model sees and that the original file is intact: ``kill -9`` during 1,000 writes, a full disk
(a 64 KiB tmpfs), a read-only file system (a tmpfs remounted read-only), permission denied (an
immutable file, and a file without write bits), a file replaced by a FIFO or a directory
between calls, and ``bwrap`` missing from ``PATH``.

Mounting needs root (``mount -t tmpfs``): those tests skip with the reason where it is not
permitted, except under CI (``CI=true``), where they fail. pi's state directory (locks, the
register of atomic writes in flight) is made private to each test through ``XDG_RUNTIME_DIR``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pi processes killed mid-way

PI = str(Path(sys.executable).with_name("pi"))

NOT_REGULAR = "not a regular file (a device, FIFO or socket)."


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime), **extra}


def pi_call(
    tmp_path: Path, cwd: Path, tool: str, args: dict[str, object], *options: str, **env: str
) -> tuple[int, str, str]:
    """``pi [OPTIONS] call TOOL ARGS`` in ``cwd``: (exit code, first line of stdout, stderr)."""
    result = subprocess.run(
        [PI, *options, "call", tool, json.dumps(args)],
        cwd=cwd,
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, result.stdout.split("\n", 1)[0], result.stderr


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}, and CI must allow it")
    pytest.skip(reason)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted at ``tmp_path/mnt`` (unmounted afterwards)."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        _skip_or_fail(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


# -- kill -9 during 1,000 writes ----------------------------------------------------------------


def _versions() -> list[str]:
    return [f"version {i:04d}\n" * 3000 for i in range(1000)]  # 39 KB each (39 MB of JSONL)


@pytest.mark.slow  # 3 runs of a 39 MB session, killed mid-way: ~15 s
def test_kill_9_during_1000_writes_leaves_a_whole_file_and_the_next_session_cleans_up(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = work / "data.txt"
    versions = _versions()
    session = tmp_path / "writes.jsonl"
    session.write_text(
        "".join(
            json.dumps(
                {
                    "role": "assistant",
                    "stopReason": "toolUse",
                    "content": [
                        {
                            "type": "toolCall",
                            "id": f"w{i}",
                            "name": "write",
                            "arguments": {"path": "data.txt", "content": content},
                        }
                    ],
                }
            )
            + "\n"
            for i, content in enumerate(versions)
        )
    )
    valid = set(versions)
    for delay in (0.3, 0.8, 1.5):
        target.write_text(versions[0])
        proc = subprocess.Popen(
            [PI, "replay", str(session), "--cwd", str(work), "--json"],
            cwd=work,
            env=_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while target.read_text() == versions[0] and time.monotonic() < deadline:
            time.sleep(0.01)  # the writes have started
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        content = target.read_text()
        assert content in valid, content[:40]  # one whole version: never torn, never empty
        assert content != versions[0]
        # the next session (any tool call) removes what the killed process left
        code, out, err = pi_call(tmp_path, work, "read", {"path": "data.txt", "limit": 1})
        assert (code, out, err) == (0, content.split("\n", 1)[0], "")
        assert sorted(os.listdir(work)) == ["data.txt"]
        assert target.read_text() == content
        assert os.listdir(tmp_path / "run" / "pi") == []


def test_the_next_session_removes_temp_files_of_dead_processes_only(tmp_path: Path) -> None:
    """The register of atomic writes in flight: an entry of a process that is gone is swept
    with its temporary file; one of a living process is kept."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    state = tmp_path / "run" / "pi"
    state.mkdir(parents=True, mode=0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    living = subprocess.Popen(["sleep", "60"])
    try:
        stale = work / ".a.txt.0123456789ab.tmp"
        stale.write_text("half")
        os.symlink(stale, state / f"tmp-{dead.pid}-0123456789ab")
        busy = work / ".a.txt.ba9876543210.tmp"
        busy.write_text("in flight")
        os.symlink(busy, state / f"tmp-{living.pid}-ba9876543210")
        code, out, _ = pi_call(tmp_path, work, "read", {"path": "a.txt"})
        assert (code, out) == (0, "a")
        assert sorted(os.listdir(work)) == [".a.txt.ba9876543210.tmp", "a.txt"]
        assert os.listdir(state) == [f"tmp-{living.pid}-ba9876543210"]
    finally:
        living.kill()
        living.wait()


# -- full disk, read-only file system --------------------------------------------------------


def test_full_disk(tmp_path: Path, tmpfs: Path) -> None:
    target = tmpfs / "f.txt"
    original = "x" * 40_000 + "\nEND\n"
    target.write_text(original)
    code, out, _ = pi_call(tmp_path, tmpfs, "write", {"path": "f.txt", "content": "y" * 100_000})
    assert (code, out) == (1, f"ENOSPC: no space left on device, open '{target}'")
    edits = [{"oldText": "END", "newText": "FIN"}]
    code, out, _ = pi_call(tmp_path, tmpfs, "edit", {"path": "f.txt", "edits": edits})
    assert (code, out) == (1, f"ENOSPC: no space left on device, open '{target}'")
    code, out, _ = pi_call(tmp_path, tmpfs, "write", {"path": "new.txt", "content": "z" * 70_000})
    assert (code, out) == (1, f"ENOSPC: no space left on device, open '{tmpfs / 'new.txt'}'")
    assert target.read_text() == original
    assert sorted(os.listdir(tmpfs)) == ["f.txt"]  # no temporary file left


def test_read_only_file_system(tmp_path: Path, tmpfs: Path) -> None:
    target = tmpfs / "f.txt"
    target.write_text("original\n")
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    code, out, _ = pi_call(tmp_path, tmpfs, "write", {"path": "f.txt", "content": "new"})
    assert (code, out) == (1, f"EROFS: read-only file system, open '{target}'")
    code, out, _ = pi_call(tmp_path, tmpfs, "write", {"path": "g.txt", "content": "new"})
    assert (code, out) == (1, f"EROFS: read-only file system, open '{tmpfs / 'g.txt'}'")
    edits = [{"oldText": "original", "newText": "changed"}]
    code, out, _ = pi_call(tmp_path, tmpfs, "edit", {"path": "f.txt", "edits": edits})
    assert (code, out) == (1, "Could not edit file: f.txt. Error code: EROFS.")
    code, out, _ = pi_call(tmp_path, tmpfs, "read", {"path": "f.txt"})
    assert (code, out) == (0, "original")
    assert target.read_text() == "original\n"
    assert sorted(os.listdir(tmpfs)) == ["f.txt"]


# -- permission denied ---------------------------------------------------------------------------


def test_permission_denied_on_an_immutable_file(tmp_path: Path) -> None:
    """As root, file modes do not stop a write; ``chattr +i`` does (``EPERM``)."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "locked.txt"
    target.write_text("original\n")
    done = subprocess.run(["chattr", "+i", str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        _skip_or_fail(f"chattr +i is not possible here: {done.stderr.strip()}")
    try:
        code, out, _ = pi_call(tmp_path, work, "write", {"path": "locked.txt", "content": "x"})
        assert (code, out) == (1, f"EPERM: operation not permitted, open '{target}'")
        edits = [{"oldText": "original", "newText": "changed"}]
        code, out, _ = pi_call(tmp_path, work, "edit", {"path": "locked.txt", "edits": edits})
        assert (code, out) == (1, "Could not edit file: locked.txt. Error code: EPERM.")
        assert target.read_text() == "original\n"
        assert sorted(os.listdir(work)) == ["locked.txt"]
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=False)


def test_permission_denied_on_a_file_without_write_bits(tmp_path: Path) -> None:
    """``chmod 444`` is refused for everyone, root included (pi_builtin_tools.files.access)."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "ro.txt"
    target.write_text("original\n")
    target.chmod(0o444)
    code, out, _ = pi_call(tmp_path, work, "write", {"path": "ro.txt", "content": "x"})
    assert (code, out) == (1, f"EACCES: permission denied, open '{target}'")
    edits = [{"oldText": "original", "newText": "changed"}]
    code, out, _ = pi_call(tmp_path, work, "edit", {"path": "ro.txt", "edits": edits})
    assert (code, out) == (1, "Could not edit file: ro.txt. Error code: EACCES.")
    assert target.read_text() == "original\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


# -- a file replaced between calls -------------------------------------------------------------


def _replay(tmp_path: Path, cwd: Path, calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    """One assistant message per call, replayed by ``pi replay --json``: each result's text."""
    session = tmp_path / "session.jsonl"
    session.write_text(
        "".join(
            json.dumps(
                {
                    "role": "assistant",
                    "stopReason": "toolUse",
                    "content": [{"type": "toolCall", "id": f"c{i}", "name": n, "arguments": a}],
                }
            )
            + "\n"
            for i, (n, a) in enumerate(calls)
        )
    )
    result = subprocess.run(
        [PI, "replay", str(session), "--cwd", str(cwd), "--json"],
        cwd=cwd,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    return [
        "".join(c.get("text", "") for c in json.loads(line)["content"])
        for line in result.stdout.splitlines()
    ]


def test_a_file_replaced_by_a_fifo_or_a_directory_between_calls(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    edit = {"path": "f.txt", "edits": [{"oldText": "v1", "newText": "v2"}]}
    calls: list[tuple[str, dict[str, object]]] = [
        ("write", {"path": "f.txt", "content": "v1\n"}),
        ("bash", {"command": "rm f.txt && mkfifo f.txt"}),
        ("read", {"path": "f.txt"}),
        ("edit", edit),
        ("write", {"path": "f.txt", "content": "v3\n"}),
        ("bash", {"command": "test -p f.txt && echo still a fifo"}),
        ("bash", {"command": "rm f.txt && mkdir f.txt"}),
        ("read", {"path": "f.txt"}),
        ("edit", edit),
        ("write", {"path": "f.txt", "content": "v3\n"}),
    ]
    with_timeout = subprocess.TimeoutExpired  # a FIFO opened for reading would hang the replay
    try:
        texts = _replay(tmp_path, work, calls)
    except with_timeout:  # pragma: no cover - the failure this test guards against
        pytest.fail("a tool blocked on the FIFO")
    assert texts == [
        "Successfully wrote to f.txt",
        "(no output)",
        f"Cannot read f.txt: {NOT_REGULAR}",
        f"Cannot edit f.txt: {NOT_REGULAR}",
        f"Cannot write f.txt: {NOT_REGULAR}",
        "still a fifo\n",
        "(no output)",
        "EISDIR: illegal operation on a directory, read",
        "EISDIR: illegal operation on a directory, read",
        f"EISDIR: illegal operation on a directory, open '{work / 'f.txt'}'",
    ]
    assert (work / "f.txt").is_dir()
    assert sorted(os.listdir(work)) == ["f.txt"]


def test_a_device_is_never_replaced(tmp_path: Path) -> None:
    """``write`` used to replace ``/dev/full`` with a regular file: a character device (a copy
    of ``/dev/null`` made with ``mknod``, so a regression cannot harm the machine) is refused
    by write and edit, also through a symlink, and stays a device."""
    work = tmp_path / "work"
    work.mkdir()
    device = work / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError as exc:
        _skip_or_fail(f"mknod is not permitted here: {exc}")
    (work / "link").symlink_to("null")
    for name in ("null", "link"):
        code, out, _ = pi_call(tmp_path, work, "write", {"path": name, "content": "x"})
        assert (code, out) == (1, f"Cannot write {name}: {NOT_REGULAR}")
        edits = [{"oldText": "a", "newText": "b"}]
        code, out, _ = pi_call(tmp_path, work, "edit", {"path": name, "edits": edits})
        assert (code, out) == (1, f"Cannot edit {name}: {NOT_REGULAR}")
        code, out, _ = pi_call(tmp_path, work, "read", {"path": name})
        assert (code, out) == (1, f"Cannot read {name}: {NOT_REGULAR}")
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert sorted(os.listdir(work)) == ["link", "null"]


# -- bwrap missing ---------------------------------------------------------------------------------


def test_bwrap_missing_fails_closed(tmp_path: Path, require_program: object) -> None:
    """With ``backend = "bwrap"`` and no ``bwrap`` on ``PATH``, every tool refuses with one clear
    text and nothing runs unsandboxed or changes."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.txt").write_text("original\n")
    config = tmp_path / "pi.toml"
    config.write_text('[sandbox]\nbackend = "bwrap"\n')
    empty = tmp_path / "empty-path"
    empty.mkdir()
    assert shutil.which("bwrap", path=str(empty)) is None
    missing = "bubblewrap (bwrap) is not installed: the bwrap sandbox cannot run"
    calls: list[tuple[str, dict[str, object], str]] = [
        ("read", {"path": "f.txt"}, missing),
        ("write", {"path": "f.txt", "content": "x"}, missing),
        ("edit", {"path": "f.txt", "edits": [{"oldText": "original", "newText": "x"}]}, missing),
        ("bash", {"command": "echo ran > ran.txt"}, missing),
        ("ls", {}, missing),
    ]
    for tool, args, expected in calls:
        code, out, _ = pi_call(tmp_path, work, tool, args, "--config", str(config), PATH=str(empty))
        assert (tool, code, out) == (tool, 1, expected)
    assert (work / "f.txt").read_text() == "original\n"
    assert sorted(os.listdir(work)) == ["f.txt"]


def test_an_unsafe_lock_directory_fails_closed(tmp_path: Path) -> None:
    """pi's state directory open to other users (someone could fake or hold the locks): edit
    and write refuse instead of mutating without the cross-process lock."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "f.txt"
    target.write_text("original\n")
    state = tmp_path / "run" / "pi"
    state.mkdir(parents=True)
    state.chmod(0o777)
    refused = (
        f"Cannot lock {target} against other pi processes: pi's state directory is not a "
        f"private directory of this user (mode 0700) ({state})"
    )
    code, out, _ = pi_call(tmp_path, work, "write", {"path": "f.txt", "content": "x"})
    assert (code, out) == (1, refused)
    edits = [{"oldText": "original", "newText": "changed"}]
    code, out, _ = pi_call(tmp_path, work, "edit", {"path": "f.txt", "edits": edits})
    assert (code, out) == (1, refused)
    assert target.read_text() == "original\n"
