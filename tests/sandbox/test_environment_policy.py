"""The ``[env]`` policy through the ``bash`` tool on every backend (issue 10 item 1): a secret in
the caller's environment reaches no command unless configured; the ssh and container backends
never send this machine's environment (the ssh command keeps its own ``SSH_CONNECTION``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from container_support import PodmanSession
from sshd_support import SshServer

from pi_builtin_tools.shell.bash import create_bash_tool_definition
from pi_builtin_tools.shell.local import LocalBashOperations
from pi_core import BashOperations
from pi_core.backends import EnvPolicy
from pi_sandbox_plugin.backends.bwrap import BwrapBackend
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.ssh import SshBashOperations

SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
    "GITHUB_TOKEN": "ghp-test-token",
    "MY_PASSWORD": "hunter2",
    # by the parts of the name, and by the shape of the value (issue 23, point 6)
    "GITHUB_PAT": "pat-test",
    "MYSQL_PWD": "mysql-test",
    "SENTRY_DSN": "https://key@sentry.example/1",
    "DATABASE_URL": "postgres://u:pw@db.example/app",
    "UPLOAD_WITH": "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
}
PLAIN = {"PI_TEST_PLAIN": "plain-value"}


@pytest.fixture(autouse=True)
def caller_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**SECRETS, **PLAIN}.items():
        monkeypatch.setenv(name, value)


async def command_env(
    operations: BashOperations, cwd: str, policy: dict[str, Any] | None = None
) -> dict[str, str]:
    """The environment ``env -0`` prints when run by the bash tool with the ``[env]`` table
    ``policy`` (``None``: no table)."""
    tool = create_bash_tool_definition(
        cwd, operations, env_policy=EnvPolicy.from_config({"env": policy or {}})
    )
    result = await tool.execute("call-1", {"command": "env -0 | tr '\\0\\n' '\\n '"}, None, None)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def secrets_in(env: dict[str, str]) -> dict[str, str]:
    return {name: env[name] for name in SECRETS if name in env}


# -- local and bwrap: the policy decides ----------------------------------------------------


async def test_local_backend_gets_no_secret_by_default(tmp_path: Path) -> None:
    env = await command_env(LocalBashOperations(), str(tmp_path))
    assert secrets_in(env) == {}
    assert env["PI_TEST_PLAIN"] == "plain-value"
    assert env["PATH"] == os.environ["PATH"]


async def test_local_backend_with_ignore_default_excludes_gets_everything(tmp_path: Path) -> None:
    env = await command_env(LocalBashOperations(), str(tmp_path), {"ignore_default_excludes": True})
    assert secrets_in(env) == SECRETS


async def test_local_backend_policy_core_exclude_set_include_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_DISABLE_THIRD_PARTY_AUTOLOAD")  # the suite's own (tests/conftest.py)
    env = await command_env(
        LocalBashOperations(),
        str(tmp_path),
        {"inherit": "core", "set": {"PI_SET": "set-value", "GITHUB_TOKEN": "configured"}},
    )
    assert secrets_in(env) == {"GITHUB_TOKEN": "configured"}
    assert "PI_TEST_PLAIN" not in env
    assert env["PI_SET"] == "set-value"
    env = await command_env(
        LocalBashOperations(),
        str(tmp_path),
        {"exclude": ["pi_test_*"], "include_only": ["PATH", "PI_*"], "set": {"PI_SET": "x"}},
    )
    assert sorted(k for k in env if k not in ("PWD", "SHLVL", "_", "OLDPWD")) == [
        "PATH",
        "PI_SET",
    ]


async def test_bwrap_backend_gets_no_secret(bwrap_ok: None, tmp_path: Path) -> None:
    env = await command_env(BwrapBackend(str(tmp_path)), str(tmp_path))
    assert secrets_in(env) == {}
    assert env["PI_TEST_PLAIN"] == "plain-value"


# -- remote backends: never this machine's environment --------------------------------------


async def test_ssh_remote_keeps_its_environment_and_gets_no_local_one(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    connection = ssh_server.connection()
    try:
        bash = SshBashOperations(connection)
        env = await command_env(bash, "/", {"ignore_default_excludes": True})
        assert secrets_in(env) == {}
        assert "PI_TEST_PLAIN" not in env
        assert re.fullmatch(
            rf"127\.0\.0\.1 \d+ 127\.0\.0\.1 {ssh_server.port}", env["SSH_CONNECTION"]
        )
        configured = await command_env(bash, "/", {"set": {"PI_SET": "set-value"}})
        assert configured["PI_SET"] == "set-value"
        assert secrets_in(configured) == {}
        passed = SshBashOperations(connection, pass_env=["PI_TEST_PLAIN", "GITHUB_TOKEN"])
        env = await command_env(passed, "/")
        assert (env["PI_TEST_PLAIN"], secrets_in(env)) == (
            "plain-value",
            {"GITHUB_TOKEN": "ghp-test-token"},
        )
    finally:
        connection.close()


async def test_container_gets_no_local_environment(podman: PodmanSession) -> None:
    backend = ContainerBackend(
        cli=podman.cli, cli_args=podman.cli_args, container=podman.container()
    )
    env = await command_env(backend, "/", {"ignore_default_excludes": True})
    assert secrets_in(env) == {}
    assert "PI_TEST_PLAIN" not in env
    configured = await command_env(backend, "/", {"set": {"PI_SET": "set-value"}})
    assert (configured["PI_SET"], secrets_in(configured)) == ("set-value", {})
    passed = ContainerBackend(
        cli=podman.cli,
        cli_args=podman.cli_args,
        container=podman.container(),
        pass_env=["MY_PASSWORD"],
    )
    assert secrets_in(await command_env(passed, "/")) == {"MY_PASSWORD": "hunter2"}


def _pi(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    pi = os.path.join(os.path.dirname(sys.executable), "pi")
    return subprocess.run(
        [pi, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )


def test_pi_call_bash_gets_no_secret_unless_configured(tmp_path: Path) -> None:
    names = "|".join([*SECRETS, *PLAIN])
    command = json.dumps({"command": f"env | grep -E '^({names})=' | sort"})
    result = _pi(["call", "bash", command], tmp_path)
    assert (result.returncode, result.stdout) == (0, "PI_TEST_PLAIN=plain-value\n")
    (tmp_path / "pi.toml").write_text(
        '[env]\nexclude = ["PI_TEST_*"]\nset = { MY_PASSWORD = "configured" }\n'
    )
    result = _pi(["call", "bash", command], tmp_path)
    assert (result.returncode, result.stdout) == (0, "MY_PASSWORD=configured\n")
    (tmp_path / "pi.toml").write_text('[env]\ninclude = ["DATABASE_URL", "*_pat"]\n')
    result = _pi(["call", "bash", command], tmp_path)
    assert (result.returncode, result.stdout) == (
        0,
        "DATABASE_URL=postgres://u:pw@db.example/app\nGITHUB_PAT=pat-test\n"
        "PI_TEST_PLAIN=plain-value\n",
    )
    (tmp_path / "pi.toml").write_text("[env]\nignore_default_excludes = true\n")
    result = _pi(["call", "bash", command], tmp_path)
    assert (result.returncode, result.stdout) == (
        0,
        "".join(f"{name}={value}\n" for name, value in sorted({**SECRETS, **PLAIN}.items())),
    )


def test_pi_call_with_a_bad_env_key_names_file_and_table(tmp_path: Path) -> None:
    (tmp_path / "other.toml").write_text("[env]\ninherit_all = true\n")
    result = _pi(["--config", "other.toml", "call", "bash", '{"command": "true"}'], tmp_path)
    assert result.returncode != 0
    assert f"{tmp_path / 'other.toml'}: env.inherit_all: unknown key" in result.stderr
