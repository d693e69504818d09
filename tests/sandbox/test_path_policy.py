"""The path policy (issue 6 item 4): read and write roots relative to the session cwd, denied
gitignore globs relative to the workspace (``~`` expanded, absolute patterns), pi's full-output
files, and the reasons given."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

import pytest

from pi_sandbox_plugin.policies.path_policy import PathDecision, PathPolicy, compile_deny_pattern


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def test_default_roots_are_the_workspace(ws: Path) -> None:
    policy = PathPolicy(str(ws))
    assert policy.check_read(str(ws / "a.txt")) == PathDecision(True)
    assert policy.check_read(str(ws)) == PathDecision(True)
    assert policy.check_write(str(ws / "sub" / "new.txt")) == PathDecision(True)
    assert policy.check_read("/etc/passwd") == PathDecision(
        False,
        "Reading '/etc/passwd' is not allowed by the sandbox path policy: it is outside the "
        f"allowed read_roots ({ws})",
    )
    assert policy.check_write(str(ws.parent / "wsx" / "f")) == PathDecision(
        False,
        f"Writing '{ws.parent}/wsx/f' is not allowed by the sandbox path policy: it is outside "
        f"the allowed write_roots ({ws})",
    )


def test_roots_are_relative_to_the_cwd_and_resolved(tmp_path: Path, ws: Path) -> None:
    (ws / "docs").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "alias").symlink_to(ws)
    policy = PathPolicy(
        str(tmp_path / "alias"), read_roots=[".", "../shared"], write_roots=["docs"]
    )
    assert policy.read_roots == (str(ws), str(tmp_path / "shared"))
    assert policy.write_roots == (str(ws / "docs"),)
    assert policy.check_read(str(tmp_path / "shared" / "x")).allowed
    assert policy.check_write(str(ws / "docs" / "x")).allowed
    assert not policy.check_write(str(ws / "x")).allowed


def test_the_resolved_path_is_named_with_the_requested_one(ws: Path) -> None:
    policy = PathPolicy(str(ws))
    assert policy.check_read("/etc/passwd", str(ws / "x")) == PathDecision(
        False,
        f"Reading '{ws}/x' (resolved: '/etc/passwd') is not allowed by the sandbox path policy: "
        f"it is outside the allowed read_roots ({ws})",
    )


def test_tilde_in_roots_and_patterns(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    policy = PathPolicy(str(ws), read_roots=[".", "~"], deny_paths=["~/.aws/**"], home=str(home))
    assert policy.check_read(str(home / "notes")).allowed
    assert policy.check_read(str(home / ".aws" / "credentials")) == PathDecision(
        False,
        f"Reading '{home}/.aws/credentials' is denied by the sandbox path policy "
        "(deny_paths pattern '~/.aws/**')",
    )


@pytest.mark.parametrize(
    ("relative", "pattern"),
    [
        (".env", ".env"),
        ("sub/deeper/.env", ".env"),
        (".ssh/id_ed25519", "**/.ssh/**"),
        ("a/b/.ssh/config", "**/.ssh/**"),
        ("config/secret.json", "config/secret.json"),
        ("secrets/x/y", "secrets"),
        ("keys/a.pem", "*.pem"),
        ("README.md", None),
        (".envrc", None),
        (".ssh", None),
        ("sub/config/secret.json", None),
    ],
)
def test_denied_globs_relative_to_the_workspace(
    ws: Path, relative: str, pattern: str | None
) -> None:
    policy = PathPolicy(
        str(ws),
        deny_paths=[".env", "**/.ssh/**", "config/secret.json", "secrets", "*.pem"],
    )
    assert policy.denied_by(str(ws / relative)) == pattern
    assert policy.check_read(str(ws / relative)).allowed is (pattern is None)
    assert policy.check_write(str(ws / relative)).allowed is (pattern is None)


def test_a_denied_name_or_a_denied_target_is_refused(ws: Path) -> None:
    policy = PathPolicy(str(ws), deny_paths=[".env"])
    assert policy.check_read(str(ws / "README"), str(ws / ".env")) == PathDecision(
        False,
        f"Reading '{ws}/.env' (resolved: '{ws}/README') is denied by the sandbox path policy "
        "(deny_paths pattern '.env')",
    )
    assert not policy.check_write(str(ws / ".env"), str(ws / "link")).allowed


def test_absolute_patterns(ws: Path) -> None:
    policy = PathPolicy(str(ws), read_roots=["/"], deny_paths=["/etc/shadow", "/root/**"])
    assert policy.denied_by("/etc/shadow") == "/etc/shadow"
    assert policy.denied_by("/root/.bashrc") == "/root/**"
    assert policy.denied_by("/etc/passwd") is None
    assert policy.check_read("/etc/passwd").allowed


def test_a_bad_pattern_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="a denied path pattern must not be empty"):
        compile_deny_pattern("  ")


def test_rg_exclude_globs_only_for_depth_independent_patterns(ws: Path) -> None:
    policy = PathPolicy(
        str(ws), deny_paths=[".env", "**/.ssh/**", "config/secret.json", "*.pem", "/etc/x"]
    )
    assert policy.rg_exclude_globs() == ["--glob=!.env", "--glob=!**/.ssh/**", "--glob=!*.pem"]
    assert policy.literal_deny_paths() == [
        str(ws / ".env"),
        str(ws / "config/secret.json"),
        "/etc/x",
    ]


def _output_file() -> str:
    return os.path.join(tempfile.gettempdir(), f"pi-bash-{secrets.token_hex(8)}.log")


def test_pi_output_files_stay_readable() -> None:
    policy = PathPolicy("/nonexistent-ws")
    path = _output_file()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    try:
        assert policy.check_read(os.path.realpath(path)) == PathDecision(True)
        assert not policy.check_write(os.path.realpath(path)).allowed
        assert (
            not PathPolicy("/nonexistent-ws", allow_output_files=False)
            .check_read(os.path.realpath(path))
            .allowed
        )
    finally:
        os.unlink(path)


def test_planted_output_file_names_are_not_readable(tmp_path: Path) -> None:
    policy = PathPolicy(str(tmp_path / "ws"))
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0o600)
    hard, soft, loose = _output_file(), _output_file(), _output_file()
    os.link(secret, hard)
    os.symlink(secret, soft)
    fd = os.open(loose, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    os.chmod(loose, 0o644)
    try:
        for planted in (hard, soft, loose):
            assert not policy.check_read(planted).allowed, planted
        wrong_name = os.path.join(tempfile.gettempdir(), "pi-bash-xyz.log")
        assert not policy.is_output_file(wrong_name)
    finally:
        for path in (hard, soft, loose):
            os.unlink(path)


def test_a_negation_is_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        compile_deny_pattern("!keep.txt")
    assert (
        str(caught.value)
        == "'!keep.txt': negation (!) is not supported: list only the paths to deny"
    )
