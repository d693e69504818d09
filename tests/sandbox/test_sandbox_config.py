"""The ``[sandbox]`` table (issue 6: configuration contract): defaults, every key of the
contract, and a ConfigError naming the file, the key and the problem for a bad value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pi_core._config import load_config
from pi_core._errors import ConfigError
from pi_sandbox_plugin.policies.command_policy import CommandPolicy
from pi_sandbox_plugin.settings.config import (
    BwrapConfig,
    ContainerConfig,
    PolicyConfig,
    PolicyTests,
    SandboxConfig,
    SshConfig,
    config_source,
    load_sandbox_config,
)

CONTRACT = """\
[sandbox]
backend = "ssh"
[sandbox.policy]
mode = "deny"
deny = [["rm"], ["git", "push"], ["curl"], ["sudo"]]
allow = []
read_roots = ["."]
write_roots = ["."]
deny_paths = [".env", "**/.ssh/**"]
[sandbox.policy.tests]
deny = ["rm -rf build"]
allow = ["echo rm"]
[sandbox.bwrap]
network = false
[sandbox.ssh]
host = "127.0.0.1"
port = 2222
user = "dev"
identity_file = "~/.ssh/id_ed25519"
remote_cwd = "/srv/work"
options = ["StrictHostKeyChecking=accept-new"]
[sandbox.container]
cli = "podman"
container = "dev-box"
image = ""
workdir = "/work"
cli_args = []
"""


def test_no_sandbox_table_is_none() -> None:
    assert load_sandbox_config({}) is None
    assert load_sandbox_config({"pi": {"tool_execution": "sequential"}}) is None


def test_defaults() -> None:
    assert load_sandbox_config({"sandbox": {}}) == SandboxConfig(
        backend="local",
        policy=None,
        bwrap=BwrapConfig(network=False, bwrap="bwrap", shell="/bin/bash", extra_args=[]),
        ssh=SshConfig(
            host="", port=22, user=None, identity_file=None, remote_cwd="", options=[], shell=""
        ),
        container=ContainerConfig(
            cli="podman", container="", image="", workdir="/work", cli_args=[], run_args=[]
        ),
    )
    assert load_sandbox_config({"sandbox": {"policy": {}}}).policy == PolicyConfig(  # type: ignore[union-attr]
        mode="deny",
        deny=[],
        allow=[],
        read_roots=["."],
        write_roots=["."],
        deny_paths=[],
        tests=PolicyTests(deny=[], allow=[]),
    )


def test_the_contract_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "pi.toml"
    path.write_text(CONTRACT)
    config = load_sandbox_config(load_config(path).data, path)
    assert config == SandboxConfig(
        backend="ssh",
        policy=PolicyConfig(
            mode="deny",
            deny=[["rm"], ["git", "push"], ["curl"], ["sudo"]],
            allow=[],
            read_roots=["."],
            write_roots=["."],
            deny_paths=[".env", "**/.ssh/**"],
            tests=PolicyTests(deny=["rm -rf build"], allow=["echo rm"]),
        ),
        bwrap=BwrapConfig(network=False),
        ssh=SshConfig(
            host="127.0.0.1",
            port=2222,
            user="dev",
            identity_file="~/.ssh/id_ed25519",
            remote_cwd="/srv/work",
            options=["StrictHostKeyChecking=accept-new"],
        ),
        container=ContainerConfig(cli="podman", container="dev-box", image="", workdir="/work"),
    )
    assert config.policy is not None
    assert config.policy.command_policy() == CommandPolicy(
        mode="deny", deny=(("rm",), ("git", "push"), ("curl",), ("sudo",)), allow=()
    )


def test_the_same_table_gives_the_same_object() -> None:
    table = {"sandbox": {"policy": {"deny": [["rm"]], "tests": {"deny": ["rm x"]}}}}
    assert load_sandbox_config(table) is load_sandbox_config(
        {"sandbox": {"policy": {"tests": {"deny": ["rm x"]}, "deny": [["rm"]]}}}
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "sandbox: must be a table ([sandbox])"),
        (
            {"backend": "vm"},
            "sandbox.backend: Input should be 'local', 'bwrap', 'ssh', 'container' or 'ray'",
        ),
        ({"polcy": {}}, "sandbox.polcy: unknown key"),
        ({"policy": {"mode": "never"}}, "sandbox.policy.mode: Input should be 'deny' or 'allow'"),
        ({"policy": {"deny": "rm"}}, "sandbox.policy.deny: Input should be a valid list"),
        (
            {"policy": {"deny": [["rm"], []]}},
            'sandbox.policy.deny[1]: a rule is a non-empty list of non-empty words, e.g. ["git", "push"]',
        ),
        (
            {"policy": {"allow": [["git", ""]]}},
            'sandbox.policy.allow[0]: a rule is a non-empty list of non-empty words, e.g. ["git", "push"]',
        ),
        (
            {"policy": {"deny": [["/bin/rm"]]}},
            "sandbox.policy.deny[0]: a rule's program is matched by basename: write 'rm', not '/bin/rm'",
        ),
        (
            {"policy": {"deny": [["rm", 3]]}},
            "sandbox.policy.deny[0][1]: Input should be a valid string",
        ),
        (
            {"policy": {"read_roots": "."}},
            "sandbox.policy.read_roots: Input should be a valid list",
        ),
        (
            {"policy": {"tests": {"deny": "rm x"}}},
            "sandbox.policy.tests.deny: Input should be a valid list",
        ),
        ({"policy": {"tests": {"maybe": []}}}, "sandbox.policy.tests.maybe: unknown key"),
        ({"bwrap": {"network": "yes"}}, "sandbox.bwrap.network: Input should be a valid boolean"),
        ({"ssh": {"port": 0}}, "sandbox.ssh.port: Input should be greater than or equal to 1"),
        ({"ssh": {"port": 70000}}, "sandbox.ssh.port: Input should be less than or equal to 65535"),
        ({"ssh": {"port": "22"}}, "sandbox.ssh.port: Input should be a valid integer"),
        ({"backend": "ssh"}, 'sandbox.ssh.host: required when backend = "ssh"'),
        (
            {"backend": "ssh", "ssh": {"host": "h"}},
            'sandbox.ssh.remote_cwd: required when backend = "ssh"',
        ),
        (
            {"backend": "ssh", "ssh": {"host": "h", "remote_cwd": "srv"}},
            "sandbox.ssh.remote_cwd: must be an absolute path",
        ),
        ({"backend": "container"}, 'sandbox.container: set exactly one of "container" and "image"'),
        (
            {"backend": "container", "container": {"container": "a", "image": "b"}},
            'sandbox.container: set exactly one of "container" and "image"',
        ),
        (
            {"backend": "container", "container": {"image": "b", "workdir": "work"}},
            "sandbox.container.workdir: must be an absolute path",
        ),
        (
            {"container": {"cli_args": "--runtime runc"}},
            "sandbox.container.cli_args: Input should be a valid list",
        ),
    ],
)
def test_bad_values_name_file_key_and_problem(table: object, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config({"sandbox": table}, "/proj/pi.toml")
    assert str(e.value) == f"/proj/pi.toml: {message}"


def test_file_name_defaults_to_pi_toml() -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config({"sandbox": {"backend": 1}})
    assert (
        str(e.value)
        == "pi.toml: sandbox.backend: Input should be 'local', 'bwrap', 'ssh', 'container' or 'ray'"
    )


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            {"deny": [["rm"]], "tests": {"deny": ["rm -rf build", "echo rm"]}},
            "sandbox.policy.tests.deny[1]: 'echo rm' is allowed, expected deny (no deny rule matches)",
        ),
        (
            {"deny": [["rm"]], "tests": {"allow": ["ls; rm x"]}},
            "sandbox.policy.tests.allow[0]: 'ls; rm x' is denied, expected allow "
            '(rule ["rm"] denies `rm x`)',
        ),
        (
            {"mode": "allow", "allow": [["ls"]], "tests": {"allow": ["ls", "cat f"]}},
            "sandbox.policy.tests.allow[1]: 'cat f' is denied, expected allow "
            '(`cat f` matches no allow rule (mode = "allow"))',
        ),
        (
            {"tests": {"allow": ["eval ls"]}},
            "sandbox.policy.tests.allow[0]: 'eval ls' is denied, expected allow "
            "(undecidable: eval runs code the policy cannot inspect)",
        ),
    ],
)
def test_failing_policy_tests_are_config_errors(policy: dict, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_sandbox_config({"sandbox": {"policy": policy}}, "/proj/pi.toml")
    assert str(e.value) == f"/proj/pi.toml: {message}"


def test_passing_policy_tests_load() -> None:
    config = load_sandbox_config(
        {
            "sandbox": {
                "policy": {
                    "mode": "allow",
                    "allow": [["ls"], ["git", "status"]],
                    "tests": {
                        "deny": ["git push", "ls; rm x"],
                        "allow": ["ls -la | ls", "git status"],
                    },
                }
            }
        }
    )
    assert config is not None and config.policy is not None
    assert config.policy.tests == PolicyTests(
        deny=["git push", "ls; rm x"], allow=["ls -la | ls", "git status"]
    )


# -- through the pi command: the user sees the file, the key and the problem ------------------

PI = str(Path(sys.executable).with_name("pi"))
LS_CALL = (
    '{"role": "assistant", "stopReason": "toolUse", "content": '
    '[{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}]}\n'
)


def pi_replay(cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (cwd / "session.jsonl").write_text(LS_CALL)
    return subprocess.run(
        [PI, *options, "replay", "session.jsonl", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[sandbox]\nbackend = "bwrapp"\n',
            "sandbox.backend: Input should be 'local', 'bwrap', 'ssh', 'container' or 'ray'",
        ),
        (
            "[sandbox.ssh]\nport = 0\n",
            "sandbox.ssh.port: Input should be greater than or equal to 1",
        ),
        ("[sandbox]\nnetworking = false\n", "sandbox.networking: unknown key"),
        (
            "[sandbox]\nnetwork = false\n",
            'sandbox.network: must be a table: [sandbox.network] mode = "off", "allow-list" or "on"',
        ),
        (
            '[sandbox.policy]\ndeny = [["rm"]]\n[sandbox.policy.tests]\nallow = ["rm -rf x"]\n',
            "sandbox.policy.tests.allow[0]: 'rm -rf x' is denied, expected allow "
            '(rule ["rm"] denies `rm -rf x`)',
        ),
    ],
)
def test_pi_names_the_config_file_key_and_problem(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "pi.toml").write_text(toml)
    result = pi_replay(tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"pi: error: {tmp_path / 'pi.toml'}: {message}\n",
    )


def test_a_config_given_with_config_is_named_by_its_path(tmp_path: Path) -> None:
    """``--config FILE``: the config dict the hooks receive remembers its file
    (``pi_core.config_file``), so the message names that file, the key and the problem."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "other.toml").write_text('[sandbox]\nbackend = "vm"\n')
    result = pi_replay(tmp_path / "ws", "--config", str(tmp_path / "other.toml"))
    assert (result.returncode, result.stderr) == (
        2,
        f"pi: error: {tmp_path / 'other.toml'}: sandbox.backend: Input should be 'local', "
        "'bwrap', 'ssh', 'container' or 'ray'\n",
    )


def test_config_source_is_the_found_file_with_that_content(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "pi.toml").write_text('[sandbox]\nbackend = "local"\n')
    found = config_source({"sandbox": {"backend": "local"}}, tmp_path / "sub")
    assert found == str(tmp_path / "pi.toml")
    assert config_source({"sandbox": {"backend": "ssh"}}, tmp_path / "sub") is None
    assert config_source({}, "/") is None
