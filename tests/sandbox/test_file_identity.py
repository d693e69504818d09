"""Denied files by identity (issue 23, point 2): ``deny_paths`` stop a denied file reached
through another name (a hard link, a bind mount, ``/proc/self/fd/N``, ``/dev/fd/N``, a symlink
chain, a name swapped while the tool opened it) for read, grep, find, ls, edit and write, and
under bwrap. The real tools, the real plugin (before-hook and guard), real bwrap, and bind
mounts made in a mount namespace of their own (``unshare``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replay_support import call, project_session

from pi_core._plugins.session import Session
from pi_sandbox_plugin.backends.wiring import STATE_KEY
from pi_sandbox_plugin.policies.file_identity import FileIdentities
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations, PathDenied

SECRET = "TOP-SECRET-42"


def denied_text(verb: str, name: Path | str, original: Path | str) -> str:
    return (
        f"{verb} '{name}' (the same file as '{original}') is denied by the sandbox path policy "
        "(deny_paths pattern '.env')"
    )


def make_workspace(root: Path, backend: str = "local") -> Path:
    """A workspace with ``.env`` (denied), a hard link ``innocent.txt`` to it, a readable
    ``a.txt`` and the ``pi.toml`` of the session."""
    ws = root / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    (ws / ".env").write_text(f"TOKEN={SECRET}\n")
    os.link(ws / ".env", ws / "sub" / "innocent.txt")
    (ws / "pi.toml").write_text(
        f'[sandbox]\nbackend = "{backend}"\n[sandbox.policy]\ndeny_paths = [".env"]\n'
    )
    return ws


def identities_of(session: Session) -> FileIdentities:
    found = session.session_context.state[STATE_KEY][0].identities
    assert isinstance(found, FileIdentities)
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


# -- the tools, with the plugin's before-hook ----------------------------------------------------


async def test_a_hard_link_is_the_denied_file_for_every_file_tool(ws: Path) -> None:
    session = project_session(ws)
    link = ws / "sub" / "innocent.txt"
    assert await call(session, "read", path="sub/innocent.txt") == (
        denied_text("Reading", link, ws / ".env"),
        True,
    )
    assert await call(session, "grep", pattern=SECRET, path="sub/innocent.txt") == (
        denied_text("Reading", link, ws / ".env"),
        True,
    )
    edit = {"path": "sub/innocent.txt", "edits": [{"oldText": "TOKEN", "newText": "X"}]}
    assert await call(session, "edit", **edit) == (denied_text("Reading", link, ws / ".env"), True)
    assert await call(session, "write", path="sub/innocent.txt", content="x") == (
        denied_text("Writing", link, ws / ".env"),
        True,
    )
    # searching and listing leave it out
    assert await call(session, "grep", pattern=SECRET) == ("No matches found", False)
    assert await call(session, "find", pattern="**/*.txt") == ("a.txt", False)
    assert await call(session, "ls", path="sub") == ("(empty directory)", False)
    assert await call(session, "ls") == ("a.txt\npi.toml\nsub/", False)
    assert (ws / ".env").read_text() == f"TOKEN={SECRET}\n"
    assert link.stat().st_ino == (ws / ".env").stat().st_ino


async def test_a_hard_link_made_during_the_session_is_recognised(ws: Path) -> None:
    session = project_session(ws)
    assert await call(session, "read", path="sub/innocent.txt") == (
        denied_text("Reading", ws / "sub" / "innocent.txt", ws / ".env"),
        True,
    )
    assert identities_of(session).builds == 1
    # after the index was built: a new denied file, and a link to it (its ctime says so)
    (ws / "sub" / ".env").write_text(f"OTHER={SECRET}\n")
    os.link(ws / "sub" / ".env", ws / "later.txt")
    assert await call(session, "read", path="later.txt") == (
        denied_text("Reading", ws / "later.txt", ws / "sub" / ".env"),
        True,
    )
    assert await call(session, "grep", pattern=SECRET) == ("No matches found", False)


async def test_a_symlink_chain_to_a_hard_link(ws: Path) -> None:
    (ws / "l3").symlink_to(ws / "sub" / "innocent.txt")
    (ws / "l2").symlink_to("l3")
    (ws / "l1").symlink_to("l2")
    session = project_session(ws)
    text, is_error = await call(session, "read", path="l1")
    assert (text, is_error) == (
        f"Reading '{ws}/l1' (the same file as '{ws}/.env') is denied by the sandbox path "
        "policy (deny_paths pattern '.env')",
        True,
    )
    assert await call(session, "grep", pattern=SECRET, path=".", glob="l*") == (
        "No matches found",
        False,
    )


async def test_proc_self_fd_and_dev_fd(ws: Path) -> None:
    session = project_session(ws)
    link = os.open(ws / "sub" / "innocent.txt", os.O_RDONLY)
    env = os.open(ws / ".env", os.O_RDONLY)
    try:
        # a hard link's descriptor: by identity; .env's: by the name it resolves to
        for fd, how in ((link, "the same file as"), (env, "resolved:")):
            for name in (f"/proc/self/fd/{fd}", f"/dev/fd/{fd}"):
                assert await call(session, "read", path=name) == (
                    f"Reading '{name}' ({how} '{ws}/.env') is denied by the sandbox path "
                    "policy (deny_paths pattern '.env')",
                    True,
                )
    finally:
        os.close(link)
        os.close(env)


# -- the guard alone: the check on what is opened ------------------------------------------------


async def test_the_guard_checks_what_it_opened_and_replaces(ws: Path) -> None:
    """Without the before-hook (a parallel batch in which bash made the link after the hooks
    ran): the read is refused on the descriptor, the write on the file it would replace."""
    session = project_session(ws)
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations)
    link = str(ws / "sub" / "innocent.txt")
    with pytest.raises(PathDenied) as caught:
        await files.read_bytes(link)
    assert (caught.value.errno, caught.value.filename) == (13, link)
    assert caught.value.reason == denied_text("Reading", link, ws / ".env")
    with pytest.raises(PathDenied) as caught:
        await files.write_bytes(link, b"x")
    assert (caught.value.errno, caught.value.filename) == (13, link)
    assert caught.value.reason == denied_text("Writing", link, ws / ".env")
    assert await files.list_dir(str(ws / "sub")) == []
    found = await files.run_rg(["--files", "--null", "--", str(ws)], str(ws))
    assert sorted(found.stdout.split(b"\0")) == [
        b"",
        f"{ws}/a.txt".encode(),
        f"{ws}/pi.toml".encode(),
    ]
    assert (ws / ".env").read_text() == f"TOKEN={SECRET}\n"


def test_a_name_swapped_while_opening_is_caught_on_the_descriptor(ws: Path) -> None:
    """The guard checked ``a.txt``; what was opened is ``.env`` (a symlink swapped into the
    path between the check and the ``open``): the kernel's name of the descriptor says so."""
    identities = identities_of(project_session(ws))
    fd = os.open(ws / ".env", os.O_RDONLY)
    try:
        with pytest.raises(PathDenied) as caught:
            identities.check_opened(str(ws / "a.txt"), fd, os.fstat(fd))
    finally:
        os.close(fd)
    assert caught.value.reason == (
        f"Reading '{ws}/a.txt' (resolved: '{ws}/.env') is denied by the sandbox path policy "
        "(deny_paths pattern '.env')"
    )


def test_the_index_is_built_only_for_a_file_with_several_names(ws: Path) -> None:
    identities = identities_of(project_session(ws))
    fd = os.open(ws / "a.txt", os.O_RDONLY)
    try:
        identities.check_opened(str(ws / "a.txt"), fd, os.fstat(fd))
    finally:
        os.close(fd)
    assert identities.builds == 0
    assert identities.path_decision(str(ws / "sub" / "innocent.txt"), "reading").reason == (
        denied_text("Reading", ws / "sub" / "innocent.txt", ws / ".env")
    )
    assert identities.builds == 1


# -- bind mounts: in a mount namespace of the test's own -----------------------------------------

BIND_SCRIPT = """
import json, os, subprocess, sys, trio
sys.path.insert(0, {tests!r})
from replay_support import call, project_session
from pathlib import Path

ws = Path({ws!r})

def mount():
    subprocess.run(["mount", "--bind", str(ws / ".env"), str(ws / "sub" / "other.txt")], check=True)
    subprocess.run(["mount", "--bind", str(ws / "config"), str(ws / "view")], check=True)

async def main():
    session = project_session(ws)
    results = []
    for name, args in {calls!r}:
        if name == "mount":
            mount()
        else:
            results.append(await call(session, name, **args))
    print(json.dumps(results))

trio.run(main)
"""


def run_in_mount_namespace(
    require_program: Callable[[str], str], ws: Path, calls: list[tuple[str, dict[str, Any]]]
) -> list[list[Any]]:
    """Run ``calls`` with the real tools in a new user and mount namespace; the pseudo-call
    ``("mount", {})`` makes ``sub/other.txt`` a bind mount of ``.env`` and ``view`` one of
    ``config`` (whose ``keys.json`` the policy denies: ``config/keys.json``)."""
    unshare = require_program("unshare")
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        reason = f"cannot create a mount namespace here: {probe.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must be able to)")
        pytest.skip(reason)
    os.unlink(ws / "sub" / "innocent.txt")  # only the bind mounts give the files other names
    (ws / "sub" / "other.txt").write_text("a mount point\n")
    (ws / "view").mkdir()
    (ws / "config").mkdir()
    (ws / "config" / "keys.json").write_text(f"{SECRET}\n")
    toml = (ws / "pi.toml").read_text().replace('[".env"]', '[".env", "config/keys.json"]')
    (ws / "pi.toml").write_text(toml)
    script = BIND_SCRIPT.format(tests=str(Path(__file__).parent), ws=str(ws), calls=calls)
    result = subprocess.run(
        [unshare, "-rm", "--propagation", "private", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[list[Any]] = json.loads(result.stdout)
    return loaded


def test_a_bind_mount_of_the_denied_file(
    require_program: Callable[[str], str], tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path)
    results = run_in_mount_namespace(
        require_program,
        ws,
        [
            ("mount", {}),
            ("read", {"path": "sub/other.txt"}),
            ("read", {"path": "view/keys.json"}),
            ("grep", {"pattern": SECRET}),
            ("find", {"pattern": "**/*.*"}),
            ("ls", {"path": "view"}),
            ("write", {"path": "sub/other.txt", "content": "x"}),
        ],
    )
    assert results == [
        [denied_text("Reading", ws / "sub" / "other.txt", ws / ".env"), True],
        [
            f"Reading '{ws}/view/keys.json' (the same file as '{ws}/config/keys.json') is "
            "denied by the sandbox path policy (deny_paths pattern 'config/keys.json')",
            True,
        ],
        ["No matches found", False],
        ["a.txt\npi.toml", False],
        ["(empty directory)", False],
        [denied_text("Writing", ws / "sub" / "other.txt", ws / ".env"), True],
    ]
    assert (ws / ".env").read_text() == f"TOKEN={SECRET}\n"


def test_a_bind_mount_under_bwrap(
    require_program: Callable[[str], str], tmp_path: Path, bwrap_ok: None
) -> None:
    ws = make_workspace(tmp_path, backend="bwrap")
    results = run_in_mount_namespace(
        require_program,
        ws,
        [
            ("bash", {"command": "cat sub/other.txt view/keys.json; echo rc=$?"}),
            ("mount", {}),  # while the session runs: the mount table changed, masks follow
            ("bash", {"command": "cat sub/other.txt view/keys.json; echo rc=$?"}),
        ],
    )
    assert results[0] == [
        "a mount point\ncat: view/keys.json: No such file or directory\nrc=1\n",
        False,
    ]
    text, is_error = results[1]
    assert (SECRET in text, text.endswith("rc=1\n"), is_error) == (False, True, False), text


# -- bwrap -----------------------------------------------------------------------------------


async def test_bwrap_masks_every_name_of_a_denied_file(tmp_path: Path, bwrap_ok: None) -> None:
    ws = make_workspace(tmp_path, backend="bwrap")
    session = project_session(ws)
    text, is_error = await call(
        session, "bash", command="cat sub/innocent.txt; echo rc=$?; ln .env copy; echo rc=$?"
    )
    assert (SECRET in text, is_error) == (False, False)
    assert text.endswith(
        "rc=1\nln: failed to create hard link 'copy' => '.env': Invalid cross-device link\nrc=1\n"
    ), text
    # no capability to take a mask off (bwrap started by root would keep them all)
    text, is_error = await call(
        session,
        "bash",
        command="umount sub/innocent.txt .env 2>/dev/null; cat .env sub/innocent.txt",
    )
    assert (SECRET in text, is_error) == (False, True), text
    assert await call(session, "read", path="sub/innocent.txt") == (
        denied_text("Reading", ws / "sub" / "innocent.txt", ws / ".env"),
        True,
    )
    assert await call(session, "grep", pattern=SECRET) == ("No matches found", False)
    assert await call(session, "ls", path="sub") == ("(empty directory)", False)
    # a link the owner makes between two commands is masked from the next sandbox on
    os.link(ws / ".env", ws / "later.txt")
    text, is_error = await call(session, "bash", command="cat later.txt; echo rc=$?")
    assert (SECRET in text, text.endswith("rc=1\n"), is_error) == (False, True, False), text


async def test_bwrap_refuses_to_start_when_a_name_cannot_be_found(
    tmp_path: Path, bwrap_ok: None
) -> None:
    ws = make_workspace(tmp_path, backend="bwrap")
    (tmp_path / "elsewhere").mkdir()
    os.link(ws / ".env", tmp_path / "elsewhere" / "copy")
    session = project_session(ws)
    assert await call(session, "bash", command="echo never") == (
        f"bubblewrap cannot hide every name of a denied file: '{ws}/.env' (deny_paths pattern "
        "'.env') has 3 names (hard links) and only 2 were found in the workspace and the "
        "patterns' folders: a sandboxed command could read it under another name; remove the "
        "other links",
        True,
    )
