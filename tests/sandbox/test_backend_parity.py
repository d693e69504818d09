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
the timestamps are dropped. The results must equal :data:`EXPECTED` exactly on every backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from container_support import PodmanSession, container_names
from sshd_support import SshServer

PI = str(Path(sys.executable).with_name("pi"))
WORKDIR = "/work"


def call(i: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": i, "name": name, "arguments": args}


SESSION: list[list[dict[str, Any]]] = [
    [
        call("r1", "read", path="a.txt"),
        call("l1", "ls"),
        call("l2", "ls", path="sub"),
        call("f1", "find", pattern="**/*.txt"),
        call("g1", "grep", pattern="o"),
    ],
    [
        call("w1", "write", path="sub/new.txt", content="made\nhere\n"),
        call("e1", "edit", path="a.txt", edits=[{"oldText": "hello", "newText": "bye"}]),
    ],
    [
        call("r2", "read", path="sub/new.txt"),
        call("r3", "read", path="a.txt", offset=2),
        call("g2", "grep", pattern="bye|made"),
        call("g3", "grep", pattern="e", path="sub", ignoreCase=True),
        call("l3", "ls", path="sub"),
        call("b1", "bash", command="pwd; cat a.txt; ls sub"),
        call("b2", "bash", command="echo out; echo err >&2; exit 3"),
    ],
    [
        call("x1", "read", path="missing.txt"),
        call("x2", "edit", path="a.txt", edits=[{"oldText": "absent", "newText": "x"}]),
        call("x3", "ls", path="nowhere"),
        call("x4", "grep", pattern="zzz"),
        call("x5", "write", path="sub", content="x"),
        call("x6", "bash", command="cat missing.txt"),
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
    "w1": ("Successfully wrote 10 bytes to sub/new.txt", False),
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
}
"""toolCallId → (text of the result, isError), normalised."""


def make_files(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello\nworld\nfoo\n")
    (root / "sub" / "b.txt").write_text("bee\n")


def replay(config: str, cwd: Path, tmp: Path, roots: list[str]) -> list[dict[str, Any]]:
    """Run ``pi --config CONFIG replay`` of :data:`SESSION` in ``cwd``; the normalised results
    (``roots``: the paths that become ``<ws>``)."""
    session = tmp / "session.jsonl"
    session.write_text(
        "".join(
            json.dumps({"role": "assistant", "content": blocks, "stopReason": "toolUse"}) + "\n"
            for blocks in SESSION
        )
    )
    config_file = tmp / f"pi-{len(list(tmp.glob('pi-*.toml')))}.toml"
    config_file.write_text('[pi]\ntool_execution = "sequential"\n' + config)
    result = subprocess.run(
        [PI, "--config", str(config_file), "replay", str(session), "--cwd", str(cwd), "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert (result.returncode, result.stderr) == (0, "")
    text = result.stdout
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(root, "<ws>")
    results = [json.loads(line) for line in text.splitlines()]
    for message in results:
        message.pop("timestamp", None)
    return results


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
    results["local"] = replay('[sandbox]\nbackend = "local"\n', local, tmp_path, [str(local)])

    bwrap = tmp_path / "bwrap"
    make_files(bwrap)
    results["bwrap"] = replay('[sandbox]\nbackend = "bwrap"\n', bwrap, tmp_path, [str(bwrap)])

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
    results["ssh"] = replay(ssh_config, ssh_session, tmp_path, [str(ssh_session), str(ssh_remote)])
    assert sorted(os.listdir(ssh_session)) == []  # everything happened on the remote side

    container_ws = tmp_path / "container"
    make_files(container_ws)
    image = podman.image()
    container_config = (
        '[sandbox]\nbackend = "container"\n[sandbox.container]\n'
        f'cli = "{podman.cli}"\nimage = "{image}"\nworkdir = "{WORKDIR}"\n'
        f"cli_args = {toml_list(podman.cli_args)}\nrun_args = {toml_list(podman.run_args)}\n"
    )
    results["container"] = replay(
        container_config, container_ws, tmp_path, [str(container_ws), WORKDIR]
    )
    assert container_names(podman.cli, podman.cli_args, ancestor=image) == []  # removed at exit

    texts = {
        backend: {
            r["toolCallId"]: ("".join(c.get("text", "") for c in r["content"]), r["isError"])
            for r in found
        }
        for backend, found in results.items()
    }
    assert {backend: found == texts["local"] for backend, found in texts.items()} == {
        "local": True,
        "bwrap": True,
        "ssh": True,
        "container": True,
    }, {b: {k: v for k, v in t.items() if texts["local"].get(k) != v} for b, t in texts.items()}
    assert results["bwrap"] == results["local"]
    assert results["ssh"] == results["local"]
    assert results["container"] == results["local"]
    assert texts["local"] == EXPECTED
    # the same end state of the workspace on each backend
    for root in (local, bwrap, ssh_remote, container_ws):
        assert (root / "a.txt").read_text() == "bye\nworld\nfoo\n"
        assert (root / "sub" / "new.txt").read_text() == "made\nhere\n"
