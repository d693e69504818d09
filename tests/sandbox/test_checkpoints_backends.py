"""Checkpoints with the sandbox's backends (issue 26): the session's commands run in a real
bubblewrap sandbox or a real podman container started from an image, the workspace is read and
restored on the host (where both mount it from), and a rewind to each call gives back the tree
just before it. ssh and Ray show the workspace only on the remote side: no checkpoints there,
and a config that asks for them explicitly is an error."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import checkpoint_probe
import pytest
from checkpoint_probe import call, message, pi, replay, tree_of

from pi_core import ConfigError, build_session, make_plugin_manager

SESSION = [
    message(call("c1", "write", path="a.txt", content="alpha\n")),
    message(call("c2", "edit", path="a.txt", edits=[{"oldText": "alpha", "newText": "beta"}])),
    message(
        call(
            "c3",
            "bash",
            command=(
                "mkdir -p d/e && printf x > d/e/x.txt && chmod 700 d && ln -s a.txt link"
                " && mv a.txt b.txt && chmod 600 b.txt && rm old.txt"
            ),
        )
    ),
    message(call("c4", "bash", command="rm -r d/e && chmod 755 d && ln -sfn b.txt link")),
]


def _workspace(root: Path, config: str) -> Path:
    checkpoint_probe.SNAPSHOTS.clear()
    root.mkdir()
    (root / "old.txt").write_text("old\n")
    os.chmod(root / "old.txt", 0o640)
    (root / "pi.toml").write_text(config)
    return root


def _rewind_to_each_call(ws: Path) -> None:
    listing = json.loads(pi("checkpoints", "--json", "--cwd", str(ws))[1])
    assert [c["toolCallId"] for c in listing["checkpoints"]] == ["c1", "c2", "c3", "c4"]
    for target in ["c4", "c3", "c1", "c2", "c4"]:
        status, out, err = pi("rewind", "--to", target, "--cwd", str(ws))
        assert status == 0, (target, out, err)
        assert tree_of(str(ws)) == checkpoint_probe.SNAPSHOTS[target], target


def test_bwrap_sessions_rewind_to_every_call(tmp_path: Path, bwrap_ok: None) -> None:
    ws = _workspace(tmp_path / "ws", '[sandbox]\nbackend = "bwrap"\n')
    results = replay(tmp_path, ws, SESSION)
    assert [r["isError"] for r in results] == [False] * 4, results
    _rewind_to_each_call(ws)


def test_podman_sessions_rewind_to_every_call(tmp_path: Path, podman: Any) -> None:
    image = podman.image()
    config = "\n".join(
        [
            "[sandbox]",
            'backend = "container"',
            "[sandbox.container]",
            f"cli = {json.dumps(podman.cli)}",
            f"image = {json.dumps(image)}",
            'workdir = "/work"',
            f"cli_args = {json.dumps(podman.cli_args)}",
            f"run_args = {json.dumps(podman.run_args)}",
            "",
        ]
    )
    ws = _workspace(tmp_path / "ws", config)
    results = replay(tmp_path, ws, SESSION)
    assert [r["isError"] for r in results] == [False] * 4, results
    _rewind_to_each_call(ws)


@pytest.mark.parametrize(
    "sandbox",
    [
        {"backend": "ssh", "ssh": {"host": "example.invalid", "remote_cwd": "/w"}},
        {"backend": "container", "container": {"container": "someone-else", "workdir": "/w"}},
    ],
    ids=["ssh", "named-container"],
)
def test_backends_whose_workspace_is_elsewhere_record_no_checkpoints(
    tmp_path: Path, sandbox: dict[str, Any]
) -> None:
    pm = make_plugin_manager()
    session = build_session(pm, tmp_path, {"sandbox": sandbox}, host="call")
    assert session.checkpoints is None
    with pytest.raises(ConfigError) as info:
        build_session(
            pm, tmp_path, {"sandbox": sandbox, "checkpoints": {"enabled": True}}, host="call"
        )
    backend = type(session.file_operations).__name__
    assert str(info.value) == (
        f"pi.toml: checkpoints.enabled: the file backend of this session ({backend}) cannot show"
        " the workspace to checkpoints; set enabled = false"
    )


# -- files the path policy denies are never recorded nor restored ----------------------------


def test_denied_paths_are_left_out_of_checkpoints_and_rewinds(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("old-secret\n")
    (ws / "pi.toml").write_text('[sandbox.policy]\ndeny_paths = [".env"]\n')
    status, out, err = pi(
        "call", "bash", '{"command": "printf new > .env; printf a > a.txt"}', cwd=ws
    )
    assert (status, err) == (0, ""), out
    listing = json.loads(pi("checkpoints", "--json", "--cwd", str(ws))[1])
    changes = [c["changes"] for c in listing["checkpoints"]]
    assert changes == [[{"path": "a.txt", "change": "created", "kind": "file"}]]
    status, out, err = pi("rewind", "--to", "call-1", "--cwd", str(ws))
    assert status == 0, err
    assert out.splitlines()[1:2] == ["  -a.txt"]
    assert (ws / ".env").read_text() == "new"  # the denied file is neither read nor written
    assert not (ws / "a.txt").exists()


def test_checkpoint_exclusions_cover_every_denied_path(tmp_path: Path) -> None:
    from pi_core.backends import LocalWorkspaceTree
    from pi_sandbox_plugin.policies.path_policy import PathPolicy

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    patterns = [
        ".env",
        "**/.ssh/**",
        "secrets/**",
        "config/*.json",
        "a/**/b.key",
        "~/.aws/**",
        f"{ws}/private/**",
        f"{tmp_path}/*/keys/",
        "/elsewhere/**",
    ]
    policy = PathPolicy(str(ws), deny_paths=patterns, home=str(home))
    exclude = policy.checkpoint_exclude()
    assert exclude == [
        ".env",
        ".ssh",
        "secrets/**",
        "config/*.json",
        "a/*/b.key",
        "a/b.key",
        "private/**",
        "keys",
    ]
    tree = LocalWorkspaceTree(str(ws), exclude)
    samples = [
        ".env", "x/.env", ".ssh/id", "x/y/.ssh/id", "secrets/k", "secrets/d/k", "config/a.json",
        "a/b.key", "a/x/b.key", "a/x/y/b.key", "private/f", "private/d/f",
        "keys/f", "x/keys", "config/d/a.json", "src/main.py", "x/secrets", "config.json", "a/b.keys", ".aws/x",
    ]  # fmt: skip
    denied = [s for s in samples if policy.denied_by(str(ws / s)) is not None]
    assert denied == samples[:13]
    assert [s for s in denied if not tree.excludes(s)] == []
    # a few more are left out: "*" of a path pattern crosses "/", a name of an absolute
    # pattern below the workspace matches at any depth
    assert [s for s in samples[13:] if tree.excludes(s)] == ["x/keys", "config/d/a.json"]
    everything = PathPolicy(str(ws), deny_paths=[f"{tmp_path}/**"], home=str(home))
    assert everything.checkpoint_exclude() == ["*"]


def test_a_crashed_session_is_recovered_and_rewound_without_its_denied_paths(
    tmp_path: Path,
) -> None:
    """The exclusions of ``pi_checkpoint_exclude`` are kept with the session: the process that
    recovers it after ``kill -9`` leaves out the same paths (was: it recorded ``.env`` as
    created by the call, and the rewind deleted it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("old-secret\n")
    (ws / "pi.toml").write_text('[sandbox.policy]\ndeny_paths = [".env"]\n')
    checkpoint_probe.killed_during_bash(ws, "printf new > .env; printf a > a.txt", tmp_path)
    listing = json.loads(pi("checkpoints", "--json", "--cwd", str(ws))[1])
    (checkpoint,) = listing["checkpoints"]
    assert (checkpoint["state"], checkpoint["changes"]) == (
        "interrupted",
        [{"path": "a.txt", "change": "created", "kind": "file"}],
    )
    assert pi("rewind", "--to", "call-1", "--cwd", str(ws))[0] == 0
    assert (ws / ".env").read_text() == "new"
    assert not (ws / "a.txt").exists()
