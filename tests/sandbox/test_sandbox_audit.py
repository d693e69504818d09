"""``[sandbox.audit]`` (issue 23, point 4): a ``path`` that cannot be an audit log (``/dev/full``,
a directory, a missing parent) is a configuration error before any call (one line, exit 2), as
``--audit FILE`` is; ``on_error`` decides what a call whose decision cannot be written gets,
with a full disk as real as a test can make one (a tmpfs filled to the last byte)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import fill_up

PI = Path(sys.executable).with_name("pi")


def pi(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PI), *args], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


def configure(root: Path, audit: str) -> None:
    (root / "pi.toml").write_text(f"[sandbox.audit]\n{audit}\n")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/dev/full", "not a regular file"),
        ("logs", "not a regular file"),
        ("missing/audit.jsonl", "No such file or directory"),
    ],
)
def test_a_path_that_cannot_be_an_audit_log_is_a_config_error(
    tmp_path: Path, path: str, reason: str
) -> None:
    (tmp_path / "logs").mkdir()
    configure(tmp_path, f'path = "{path}"')
    out = pi(tmp_path, "call", "ls", "{}")
    assert (out.returncode, out.stdout, out.stderr) == (
        2,
        "",
        f"pi: error: {tmp_path / 'pi.toml'}: sandbox.audit.path: cannot open {path!r}: {reason}\n",
    )


def test_on_error_must_be_deny_or_allow(tmp_path: Path) -> None:
    configure(tmp_path, 'path = "audit.jsonl"\non_error = "ignore"')
    out = pi(tmp_path, "call", "ls", "{}")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"pi: error: {tmp_path / 'pi.toml'}: sandbox.audit.on_error: "
        "Input should be 'deny' or 'allow'\n"
    )


def call(root: Path, *options: str) -> dict[str, Any]:
    out = pi(root, "call", "ls", "{}", "--json", *options)
    message: dict[str, Any] = json.loads(out.stdout)
    return message


@pytest.mark.parametrize("via", ["config", "--audit"])
def test_on_error_deny_and_allow_with_a_full_disk(
    tmp_path: Path, small_filesystem: Any, via: str
) -> None:
    disk = small_filesystem(64 * 1024)
    log = disk / "audit.jsonl"
    tmp_path = tmp_path / "project"
    tmp_path.mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    options = ("--audit", str(log)) if via == "--audit" else ()
    path = "unused.jsonl" if via == "--audit" else str(log)
    configure(tmp_path, f'path = "{path}"')
    log.touch()
    fill_up(disk)
    refused = call(tmp_path, *options)
    assert (refused["isError"], refused["content"][0]["text"]) == (
        True,
        f"Blocked: the audit log {log} could not record the decision to allow this call: "
        "No space left on device",
    )
    configure(tmp_path, f'path = "{path}"\non_error = "allow"')
    allowed = call(tmp_path, *options)
    assert (allowed["isError"], allowed["content"][0]["text"]) == (False, "a.txt\npi.toml")
    assert log.read_text() == ""
