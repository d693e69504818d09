"""The ``[env]`` command environment policy (``pi_core.backends.EnvPolicy``): the order of its
steps, the default excludes, validation with the file and table named, and what a remote
backend sends."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_core import ConfigError, load_config
from pi_core._backend_kit.env_policy import name_parts
from pi_core.backends import EnvPolicy, command_environment, looks_secret, remote_environment

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


# -- secrets by name and by shape (issue 23, point 6) ----------------------------------------

ALNUM = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4cD6eF8gH0jK2lM4nP6qR8sT0uV2wX4yZ6"
HEX = "0123456789abcdef" * 8


def alnum(n: int) -> str:
    return (ALNUM * 4)[:n]


SECRET_SHAPES = {
    # by name: a part of the name
    "GITHUB_PAT": "11ABCDEFG0123456789",
    "azureDevopsPat": "plainlookingvalue",
    "MYSQL_PWD": "hunter2",
    "DB_PASS": "hunter2",
    "SMTP_PASSWD": "hunter2",
    "GPG_PASSPHRASE": "correct horse battery staple",
    "NPM_CONFIG__AUTH": "dXNlcjpwYXNz",
    "DOCKER_AUTH_CONFIG": '{"auths":{}}',
    "HTTP_AUTHORIZATION": "Digest username=me",
    "SENTRY_DSN": "https://abc123@o1.ingest.sentry.io/42",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/gcp.json",
    "AWS_SHARED_CREDENTIALS_FILE": "/home/me/.aws/credentials",
    "JENKINS_CREDS": "me:pw",
    "SESSION_COOKIE": "abc",
    # by name: the words of the old default excludes
    "OPENAI_API_KEY": "x",
    "AWS_SECRET_ACCESS_KEY": "x",
    "GITHUB_TOKEN": "x",
    # by value: whatever the name
    "DATABASE_URL": "postgres://u:pw@h/db",
    "REDIS_URL": "redis://:s3cret@localhost:6379/0",
    "HTTPS_PROXY": "http://alice:pa55@proxy.corp:3128",
    "DEPLOY_SSH": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\n-----END OPENSSH PRIVATE KEY-----\n",
    "TLS_PEM": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==;EndpointSuffix=core.windows.net",
    "SQLSERVER": "Server=db;Database=app;User Id=sa;Password=Passw0rd!;",
    "GIT_CONFIG_PARAMETERS": f"'http.extraheader=Authorization: Bearer ghp_{alnum(36)}'",
    "GH_CLI": f"ghp_{alnum(36)}",
    "GITHUB_APP": f"ghs_{alnum(36)}",
    "FINE_GRAINED": f"github_pat_11{alnum(20)}_{alnum(59)}",
    "GITLAB": f"glpat-{alnum(20)}",
    "OPENAI": f"sk-proj-{alnum(40)}_{alnum(40)}",
    "CLAUDE": f"sk-ant-api03-{alnum(93)}",
    "SLACK_BOT": "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "SLACK_APP": "xapp-1-A0123456789-1234567890123-abcdef0123",
    "BOTO_ID": "AKIAIOSFODNN7EXAMPLE",
    "MAPS": f"AIza{alnum(35)}",
    "NPM_PUBLISH": f"npm_{alnum(36)}",
    "TWINE": f"pypi-AgEIcHlwaS5vcmc{alnum(60)}",
    "ID_JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    "STRIPE": f"sk_live_51H{alnum(40)}",
    "SENDGRID": f"SG.{alnum(22)}.{alnum(43)}",
}
"""40 real-world shapes of secrets in an environment: each must be dropped."""

ORDINARY = {
    "PATH": "/home/me/.local/bin:/usr/bin:/bin",
    "PWD": "/home/me/project",
    "OLDPWD": "/home/me",
    "HOME": "/home/me",
    "LANG": "en_US.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm-256color",
    "COLORTERM": "truecolor",
    "EDITOR": "vim",
    "PAGER": "less",
    "SHELL": "/bin/bash",
    "USER": "me",
    "LOGNAME": "me",
    "HOSTNAME": "desk-42",
    "TMPDIR": "/tmp",
    "TZ": "Europe/Paris",
    "PYTHONPATH": "/home/me/project/src",
    "VIRTUAL_ENV": "/home/me/project/.venv",
    "GOPATH": "/home/me/go",
    "JAVA_HOME": "/usr/lib/jvm/java-21",
    "MANPATH": "/usr/share/man",
    "DATABASE_URL_RO": "postgres://db.internal:5432/app",
    "HTTP_PROXY": "http://proxy.corp:3128",
    "NO_PROXY": "localhost,127.0.0.1,.corp",
    "SSH_AUTH_SOCK": "/tmp/ssh-XXXXabcd/agent.1234",
    "XAUTHORITY": "/run/user/1000/.mutter-Xwaylandauth.ABC123",
    "DISPLAY": ":0",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "DOCKER_HOST": "unix:///run/user/1000/docker.sock",
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass",
    "COMPASS_HOME": "/opt/compass",
    "PASSAGE_DIR": "/home/me/passages",
    "LS_COLORS": "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:*.tar=01;31",
    "KUBECONFIG": "/home/me/.kube/config",
    "PIP_INDEX_URL": "https://pypi.org/simple",
    "npm_config_registry": "https://registry.npmjs.org/",
    "GITHUB_REPOSITORY": "octo/task-runner-sk-learn-experiments",
    "CI": "true",
    "SHLVL": "2",
}
"""40 ordinary variables (some with names or values close to a secret's): each must be kept."""


def test_forty_secret_shapes_are_dropped_and_forty_ordinary_variables_kept() -> None:
    assert (len(SECRET_SHAPES), len(ORDINARY)) == (40, 40)
    caller = {**SECRET_SHAPES, **ORDINARY}
    assert EnvPolicy().apply(caller) == ORDINARY
    assert EnvPolicy(inherit="core").apply(caller) == {
        k: v
        for k, v in ORDINARY.items()
        if k
        in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "SHELL", "USER", "LOGNAME", "TMPDIR", "TZ")
    }
    assert [name for name, value in caller.items() if looks_secret(name, value)] == list(
        SECRET_SHAPES
    )


def test_include_passes_one_secret_on_without_turning_the_filter_off() -> None:
    caller = {**SECRET_SHAPES, **ORDINARY}
    policy = EnvPolicy.model_validate({"include": ["github_pat", "*_URL"]})
    assert policy.apply(caller) == {
        **ORDINARY,
        "GITHUB_PAT": SECRET_SHAPES["GITHUB_PAT"],
        "DATABASE_URL": "postgres://u:pw@h/db",
        "REDIS_URL": "redis://:s3cret@localhost:6379/0",
    }
    # exclude still applies to what include let through
    policy = EnvPolicy.model_validate({"include": ["GITHUB_PAT"], "exclude": ["GITHUB_*"]})
    assert "GITHUB_PAT" not in policy.apply(caller)


def test_name_parts_split_at_separators_digits_and_humps() -> None:
    assert name_parts("NPM_CONFIG__AUTH") == ["NPM", "CONFIG", "AUTH"]
    assert name_parts("githubPat") == ["GITHUB", "PAT"]
    assert name_parts("HTTPAuth2-x.y") == ["HTTP", "AUTH", "2", "X", "Y"]
    assert name_parts("COMPASS") == ["COMPASS"]
