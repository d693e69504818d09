"""Issue 6 "Done when": a recorded session of read, write, edit, ls, find, grep and bash calls gives
the same tool results (paths normalised) on the local, bwrap, ssh and container backends.

One JSONL of assistant messages is replayed with the real ``pi replay --json`` (a subprocess)
under a config file choosing each backend (``pi --config FILE``, kept outside the workspace so
the tools never see it). Each backend starts from the same workspace files:

* local, bwrap: the workspace is the session cwd;
* ssh: the test ``sshd`` on 127.0.0.1; the session cwd is an empty directory that maps to
  ``remote_cwd`` (another directory holding the files), so a result that came from the local
  file system instead would differ;
* container: started by pi from the image built here (``[sandbox.container] image``), the
  session cwd mounted at ``/work``; pi removes the container when it exits.

Normalised: the session cwd and the backend's root (``remote_cwd``, ``/work``) become ``<ws>``;
the timestamps are dropped. The results must equal :data:`EXPECTED` exactly on every backend,
including the refusal of a FIFO by read, edit and write (issue 10: only regular files are read
or replaced, with one text whatever the backend).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from container_support import PodmanSession, container_names
from replay_support import replay, texts, tool_call
from sshd_support import SshServer

pytestmark = pytest.mark.slow  # sshd, podman and bwrap

WORKDIR = "/work"


SESSION: list[list[dict[str, Any]]] = [
    [
        tool_call("r1", "read", path="a.txt"),
        tool_call("l1", "ls"),
        tool_call("l2", "ls", path="sub"),
        tool_call("f1", "find", pattern="**/*.txt"),
        tool_call("g1", "grep", pattern="o"),
    ],
    [
        tool_call("w1", "write", path="sub/new.txt", content="made\nhere\n"),
        tool_call("e1", "edit", path="a.txt", edits=[{"oldText": "hello", "newText": "bye"}]),
    ],
    [
        tool_call("r2", "read", path="sub/new.txt"),
        tool_call("r3", "read", path="a.txt", offset=2),
        tool_call("g2", "grep", pattern="bye|made"),
        tool_call("g3", "grep", pattern="e", path="sub", ignoreCase=True),
        tool_call("l3", "ls", path="sub"),
        tool_call("b1", "bash", command="pwd; cat a.txt; ls sub"),
        tool_call("b2", "bash", command="echo out; echo err >&2; exit 3"),
    ],
    [
        tool_call("x1", "read", path="missing.txt"),
        tool_call("x2", "edit", path="a.txt", edits=[{"oldText": "absent", "newText": "x"}]),
        tool_call("x3", "ls", path="nowhere"),
        tool_call("x4", "grep", pattern="zzz"),
        tool_call("x5", "write", path="sub", content="x"),
        tool_call("x6", "bash", command="cat missing.txt"),
    ],
    [tool_call("p0", "bash", command="mkfifo pipe")],
    [
        tool_call("p1", "read", path="pipe"),
        tool_call("p2", "edit", path="pipe", edits=[{"oldText": "a", "newText": "b"}]),
        tool_call("p3", "write", path="pipe", content="x"),
    ],
]

NOT_FOUND = (
    "Could not find the exact text in a.txt. The old text must match exactly including all "
    "whitespace and newlines.\nFile starts with:\n  1: bye\n  2: world\n  3: foo\n  4: "
)

EXPECTED: dict[str, tuple[str, bool]] = {
    "r1": ("hello\nworld\nfoo\n", False),
    "l1": ("a.txt\nsub/", False),
    "l2": ("b.txt", False),
    "f1": ("a.txt\nsub/b.txt", False),
    "g1": ("a.txt:1: hello\na.txt:2: world\na.txt:3: foo", False),
    "w1": ("Successfully wrote to sub/new.txt", False),
    "e1": ("Successfully replaced 1 block(s) in a.txt.", False),
    "r2": ("made\nhere\n", False),
    "r3": ("world\nfoo\n", False),
    "g2": ("a.txt:1: bye\nsub/new.txt:1: made", False),
    "g3": ("b.txt:1: bee\nnew.txt:1: made\nnew.txt:2: here", False),
    "l3": ("b.txt\nnew.txt", False),
    "b1": ("<ws>\nbye\nworld\nfoo\nb.txt\nnew.txt\n", False),
    "b2": ("out\nerr\n\n\nCommand exited with code 3", True),
    "x1": ("ENOENT: no such file or directory, access '<ws>/missing.txt'", True),
    "x2": (NOT_FOUND, True),
    "x3": ("Path not found: <ws>/nowhere", True),
    "x4": ("No matches found", False),
    "x5": ("EISDIR: illegal operation on a directory, open '<ws>/sub'", True),
    "x6": ("cat: missing.txt: No such file or directory\n\n\nCommand exited with code 1", True),
    "p0": ("(no output)", False),
    "p1": ("Cannot read pipe: not a regular file (a device, FIFO or socket).", True),
    "p2": ("Cannot edit pipe: not a regular file (a device, FIFO or socket).", True),
    "p3": ("Cannot write pipe: not a regular file (a device, FIFO or socket).", True),
}
"""toolCallId → (text of the result, isError), normalised."""


def make_files(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello\nworld\nfoo\n")
    (root / "sub" / "b.txt").write_text("bee\n")


def replay_on(config: str, cwd: Path, tmp: Path, roots: list[str]) -> list[dict[str, Any]]:
    """:data:`SESSION` replayed in ``cwd`` under ``CONFIG`` (plus sequential execution), the
    results normalised (``roots``: the paths that become ``<ws>``)."""
    config_file = tmp / f"pi-{len(list(tmp.glob('pi-*.toml')))}.toml"
    config_file.write_text('[pi]\ntool_execution = "sequential"\n' + config)
    results = replay(cwd, SESSION, tmp, "--config", str(config_file), timeout=300)
    text = json.dumps(results)
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(json.dumps(root)[1:-1], "<ws>")
    normalised: list[dict[str, Any]] = json.loads(text)
    for message in normalised:
        message.pop("timestamp", None)
    return normalised


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def test_one_session_gives_the_same_results_on_every_backend(
    tmp_path: Path,
    bwrap_ok: None,
    ssh_server: SshServer,
    podman: PodmanSession,
) -> None:
    results: dict[str, list[dict[str, Any]]] = {}

    local = tmp_path / "local"
    make_files(local)
    results["local"] = replay_on('[sandbox]\nbackend = "local"\n', local, tmp_path, [str(local)])

    bwrap = tmp_path / "bwrap"
    make_files(bwrap)
    results["bwrap"] = replay_on('[sandbox]\nbackend = "bwrap"\n', bwrap, tmp_path, [str(bwrap)])

    ssh_session, ssh_remote = tmp_path / "ssh-session", tmp_path / "ssh-remote"
    ssh_session.mkdir()
    make_files(ssh_remote)
    settings = ssh_server.connection()
    ssh_config = (
        '[sandbox]\nbackend = "ssh"\n[sandbox.ssh]\n'
        f'host = "{settings.host}"\nport = {settings.port}\nuser = "{settings.user}"\n'
        f'identity_file = "{settings.identity_file}"\nremote_cwd = "{ssh_remote}"\n'
        f"options = {toml_list(list(settings.options))}\n"
    )
    results["ssh"] = replay_on(
        ssh_config, ssh_session, tmp_path, [str(ssh_session), str(ssh_remote)]
    )
    assert sorted(os.listdir(ssh_session)) == []  # everything happened on the remote side

    container_ws = tmp_path / "container"
    make_files(container_ws)
    image = podman.image()
    before = container_names(podman.cli, podman.cli_args, ancestor=image)
    container_config = (
        '[sandbox]\nbackend = "container"\n[sandbox.container]\n'
        f'cli = "{podman.cli}"\nimage = "{image}"\nworkdir = "{WORKDIR}"\n'
        f"cli_args = {toml_list(podman.cli_args)}\nrun_args = {toml_list(podman.run_args)}\n"
    )
    results["container"] = replay_on(
        container_config, container_ws, tmp_path, [str(container_ws), WORKDIR]
    )
    # the container pi started from the image is removed when pi exits
    assert container_names(podman.cli, podman.cli_args, ancestor=image) == before

    by_backend = {backend: texts(found) for backend, found in results.items()}
    assert {backend: found == by_backend["local"] for backend, found in by_backend.items()} == {
        "local": True,
        "bwrap": True,
        "ssh": True,
        "container": True,
    }, {
        b: {k: v for k, v in t.items() if by_backend["local"].get(k) != v}
        for b, t in by_backend.items()
    }
    assert results["bwrap"] == results["local"]
    assert results["ssh"] == results["local"]
    assert results["container"] == results["local"]
    assert by_backend["local"] == EXPECTED
    # the same end state of the workspace on each backend
    for root in (local, bwrap, ssh_remote, container_ws):
        assert (root / "a.txt").read_text() == "bye\nworld\nfoo\n"
        assert (root / "sub" / "new.txt").read_text() == "made\nhere\n"
        assert stat.S_ISFIFO((root / "pipe").lstat().st_mode)  # never replaced
