"""The ``[env]`` command environment policy (``pi_core.backends.EnvPolicy``): the order of its
steps, the default excludes, validation with the file and table named, and what a remote
backend sends."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_core import ConfigError, load_config
from pi_core.backends import EnvPolicy, command_environment, remote_environment

CALLER = {
    "HOME": "/home/me",
    "PATH": "/usr/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "TERM": "xterm",
    "OPENAI_API_KEY": "sk-1",
    "AWS_SECRET_ACCESS_KEY": "aws-1",
    "GITHUB_TOKEN": "ghp-1",
    "MY_PASSWORD": "pw-1",
    "api_key_lower": "k-1",
    "EDITOR": "vi",
    "CARGO_HOME": "/c",
}


def test_default_policy_drops_keys_secrets_tokens_passwords() -> None:
    assert EnvPolicy().apply(CALLER) == {
        "HOME": "/home/me",
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "EDITOR": "vi",
        "CARGO_HOME": "/c",
    }


def test_ignore_default_excludes_restores_copy_everything() -> None:
    assert EnvPolicy(ignore_default_excludes=True).apply(CALLER) == CALLER


def test_inherit_core_and_none() -> None:
    assert EnvPolicy(inherit="core").apply(CALLER) == {
        "HOME": "/home/me",
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
    }
    assert EnvPolicy(inherit="none").apply(CALLER) == {}


def test_steps_run_in_order_exclude_set_include_only() -> None:
    policy = EnvPolicy.model_validate(
        {
            "exclude": ["lc_*", "EDITOR"],
            "set": {"GITHUB_TOKEN": "configured", "EDITOR": "nano", "CI": "1"},
            "include_only": ["PATH", "EDITOR", "*TOKEN", "LC_*"],
        }
    )
    # exclude drops LC_ALL and the inherited EDITOR; set brings EDITOR back and adds a token
    # by name; include_only keeps what matches (LC_ALL is already gone, CI is filtered out)
    assert policy.apply(CALLER) == {
        "PATH": "/usr/bin",
        "EDITOR": "nano",
        "GITHUB_TOKEN": "configured",
    }


def test_command_environment_reads_the_env_table() -> None:
    config = {"env": {"inherit": "none", "set": {"A": "1"}}}
    assert command_environment(config, CALLER) == {"A": "1"}
    assert command_environment({}, {"X_TOKEN": "t", "Y": "y"}) == {"Y": "y"}


def test_remote_environment_sends_only_what_pi_changed_or_names() -> None:
    env = {**EnvPolicy(ignore_default_excludes=True).apply(CALLER), "PI_SESSION_ID": "s1"}
    env["LANG"] = "en_US.UTF-8"
    assert remote_environment(env, environ=CALLER) == {
        "PI_SESSION_ID": "s1",
        "LANG": "en_US.UTF-8",
    }
    assert remote_environment(env, ["EDITOR", "MY_PASSWORD", "ABSENT"], environ=CALLER) == {
        "PI_SESSION_ID": "s1",
        "LANG": "en_US.UTF-8",
        "EDITOR": "vi",
        "MY_PASSWORD": "pw-1",
    }
    assert remote_environment(None, environ=CALLER) == {}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('inherit = "some"', "env.inherit: Input should be 'all', 'core' or 'none' (got \"some\")"),
        ("exclud = []", "env.exclud: unknown key"),
        ("set = { A = 1 }", "env.set.A: Input should be a valid string (got 1)"),
        ('include_only = "PATH"', 'env.include_only: Input should be a valid tuple (got "PATH")'),
        ('ignore_default_excludes = "yes"', "env.ignore_default_excludes: Input should be a valid boolean (got \"yes\")"),
    ],
)  # fmt: skip
def test_bad_env_table_names_the_file_and_table(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "other.toml"
    path.write_text(f"[env]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        EnvPolicy.from_config(load_config(path).data)
    assert str(info.value) == f"{path}: {message}"


def test_env_must_be_a_table(tmp_path: Path) -> None:
    path = tmp_path / "pi.toml"
    path.write_text('env = "all"\n')
    with pytest.raises(ConfigError) as info:
        EnvPolicy.from_config(load_config(path).data)
    assert str(info.value) == f"{path}: env: must be a table ([env])"
    with pytest.raises(ConfigError) as info:
        EnvPolicy.from_config({"env": {"inherit": "x"}})
    assert str(info.value).startswith("pi.toml: env.inherit: ")
