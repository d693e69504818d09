"""The public names of ``pi_sandbox_plugin`` (its ``__all__``) and where they come from."""

from __future__ import annotations

import pi_sandbox_plugin
from pi_sandbox_plugin.backends.bwrap import BwrapBackend
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.ssh import SshBashOperations, SshConnection, SshFileOperations
from pi_sandbox_plugin.policies.command_policy import CommandPolicy, Decision
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations, PathDenied
from pi_sandbox_plugin.policies.path_policy import PathPolicy
from pi_sandbox_plugin.settings.config import SandboxConfig, load_sandbox_config


def test_all_lists_exactly_the_public_names() -> None:
    assert pi_sandbox_plugin.__all__ == [
        "BwrapBackend",
        "CommandPolicy",
        "ContainerBackend",
        "Decision",
        "GuardedFileOperations",
        "PathDenied",
        "PathPolicy",
        "SandboxConfig",
        "SandboxUnavailable",
        "SshBashOperations",
        "SshConnection",
        "SshFileOperations",
        "load_sandbox_config",
    ]


def test_exported_names_are_the_implementations() -> None:
    expected = {
        "BwrapBackend": BwrapBackend,
        "CommandPolicy": CommandPolicy,
        "ContainerBackend": ContainerBackend,
        "Decision": Decision,
        "GuardedFileOperations": GuardedFileOperations,
        "PathDenied": PathDenied,
        "PathPolicy": PathPolicy,
        "SandboxConfig": SandboxConfig,
        "SandboxUnavailable": SandboxUnavailable,
        "SshBashOperations": SshBashOperations,
        "SshConnection": SshConnection,
        "SshFileOperations": SshFileOperations,
        "load_sandbox_config": load_sandbox_config,
    }
    assert {name: getattr(pi_sandbox_plugin, name) for name in pi_sandbox_plugin.__all__} == (
        expected
    )


def test_exported_policy_decides_through_the_package_names() -> None:
    config = pi_sandbox_plugin.load_sandbox_config({"sandbox": {"policy": {"deny": [["rm"]]}}})
    assert config is not None and config.policy is not None
    decision = config.policy.command_policy().check("ls && rm -rf x")
    assert isinstance(decision, pi_sandbox_plugin.Decision)
    assert (decision.allowed, decision.rule) == (False, ("rm",))
    assert decision.block_reason() == (
        'Command blocked by the sandbox command policy: rule ["rm"] denies `rm -rf x`'
    )


def test_the_local_file_backend_is_the_one_in_pi_core() -> None:
    import pi_builtin_tools.files.local
    import pi_core._backend_kit.local_files

    assert (
        pi_builtin_tools.files.local.LocalFileOperations
        is pi_core._backend_kit.local_files.LocalFileOperations
    )
    assert pi_builtin_tools.files.local.find_rg is pi_core._backend_kit.local_files.find_rg
    assert not hasattr(pi_sandbox_plugin, "local_files")
