"""The ``[sandbox]`` table of ``pi.toml``, validated with pydantic (see
``docs/reference/configuration.md``).

::

    [sandbox]
    backend = "local"            # "local" | "bwrap" | "ssh" | "container" | "ray"
    [sandbox.policy]             # the command and path policies (absent: no command policy)
    mode = "deny"                # or "allow": only listed programs/prefixes may run
    deny = [["rm"], ["git", "push"]]   # argv prefixes; a program matches by basename
    allow = []                   # used when mode = "allow"
    prefix_match = "grammar"     # or "literal": no option skipping before a subcommand
    [sandbox.policy.grammars.mytool]   # a program grammar (extends a built-in one of that name)
    value_options = ["-C", "--root"]
    flag_options = ["-q"]
    read_roots = ["."]
    write_roots = ["."]
    deny_paths = [".env", "**/.ssh/**"]
    [sandbox.policy.tests]       # checked when the config loads
    deny = ["rm -rf build"]
    allow = ["echo rm"]
    [sandbox.network]            # what sandboxed commands may reach (see network/rules.py)
    mode = "allow-list"          # "off" (default: no network), "allow-list", "on" (host network)
    allow = ["pypi.org", "*.pythonhosted.org", "api.github.com:443", "10.20.0.0/16"]
    deny = ["*.internal.example"] # deny wins over allow
    unknown = "deny"             # or "ask": a host on neither list goes to the approval path
    [sandbox.bwrap]
    network = false              # without [sandbox.network]: true is mode "on", false "off"
    [sandbox.ssh]
    host = "127.0.0.1"
    port = 2222
    user = "dev"
    identity_file = "~/.ssh/id_ed25519"
    remote_cwd = "/srv/work"
    options = ["StrictHostKeyChecking=accept-new"]
    [sandbox.container]
    cli = "podman"               # or "docker", "nerdctl"
    container = "dev-box"        # exec into this running container ...
    image = ""                   # ... or start one from this image, workspace mounted
    workdir = "/work"
    cli_args = []
    [sandbox.ray]
    address = "auto"             # or "HOST:PORT", "ray://HOST:PORT", "local"
    resources = {gpu_box = 1}    # place each session's actor on a node offering these
    labels = {}                  # ... and/or having these node labels
    workspace = ""               # a directory on the node; "": a new one per session
    ship = "cwd"                 # unpack the session cwd (or a directory/archive) there

Unknown keys are errors (a misspelt key never passes). Every error is a
:class:`~pi_core._errors.ConfigError` whose one-line message names the file, the key and the
problem: ``/abs/pi.toml: sandbox.policy.deny[1]: a rule is a non-empty list of words``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pydantic
from pydantic import StrictBool, StrictInt, StrictStr

from pi_core import ConfigError, config_file, format_config_error
from pi_sandbox_plugin.policies.command_policy import CommandPolicy
from pi_sandbox_plugin.policies.grammars import BUILTIN_GRAMMARS, grammar_from_table, merged

SANDBOX_TABLE = "sandbox"
DEFAULT_CONFIG_NAME = "pi.toml"
"""The file named in messages when the caller does not know which file the config came from."""


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class PolicyTests(_Model):
    """``[sandbox.policy.tests]``: command lines the policy must deny and must allow."""

    deny: list[StrictStr] = []
    allow: list[StrictStr] = []


def _check_rule(rule: list[str]) -> list[str]:
    if not rule or any(not word for word in rule):
        raise ValueError('a rule is a non-empty list of non-empty words, e.g. ["git", "push"]')
    if "/" in rule[0]:
        raise ValueError(
            f"a rule's program is matched by basename: write {rule[0].rsplit('/', 1)[-1]!r}, "
            f"not {rule[0]!r}"
        )
    return rule


RuleWords = Annotated[list[StrictStr], pydantic.AfterValidator(_check_rule)]
"""One rule: an argv prefix whose first word is a program basename."""


class GrammarConfig(_Model):
    """``[sandbox.policy.grammars.NAME]``: a program grammar (see
    :mod:`pi_sandbox_plugin.policies.grammars`); ``extend = true`` adds to the built-in entry."""

    value_options: list[StrictStr] = []
    flag_options: list[StrictStr] = []
    stop_options: list[StrictStr] = []
    optional_numeric: list[StrictStr] = []
    attached: StrictBool | None = None
    clusters: StrictBool | None = None
    plus_words: StrictBool | None = None
    assignments: StrictBool | None = None
    interspersed: StrictBool | None = None
    any_operand: StrictBool | None = None
    dashed: StrictBool | None = None
    operand_pattern: StrictStr | None = None
    extend: StrictBool = True

    @pydantic.field_validator("value_options", "flag_options", "stop_options", "optional_numeric")
    @classmethod
    def _options(cls, options: list[str]) -> list[str]:
        for option in options:
            if not option.startswith(("-", "+")) or option in ("-", "--"):
                raise ValueError(f"an option starts with '-': {option!r}")
        return options

    @pydantic.field_validator("operand_pattern")
    @classmethod
    def _pattern(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"not a regular expression: {e}") from None
        return pattern


class PolicyConfig(_Model):
    """``[sandbox.policy]``: the command policy (``mode``, ``deny``, ``allow``, ``prefix_match``,
    ``grammars``), the path policy (``read_roots``, ``write_roots``, ``deny_paths``) and the
    ``tests``."""

    mode: Literal["deny", "allow"] = "deny"
    deny: list[RuleWords] = []
    allow: list[RuleWords] = []
    prefix_match: Literal["grammar", "literal"] = "grammar"
    grammars: dict[StrictStr, GrammarConfig] = {}

    @pydantic.field_validator("grammars")
    @classmethod
    def _grammar_names(cls, grammars: dict[str, GrammarConfig]) -> dict[str, GrammarConfig]:
        for name in grammars:
            if not name or "/" in name:
                raise ValueError(f"a grammar is named by the program's basename, not {name!r}")
        return grammars

    read_roots: list[StrictStr] = ["."]
    write_roots: list[StrictStr] = ["."]
    deny_paths: list[StrictStr] = []
    tests: PolicyTests = PolicyTests()

    def command_policy(self) -> CommandPolicy:
        """The :class:`~pi_sandbox_plugin.policies.command_policy.CommandPolicy` of these rules."""
        extra = {
            name: grammar_from_table(name, table.model_dump(exclude_none=True))
            for name, table in self.grammars.items()
        }
        return CommandPolicy(
            mode=self.mode,
            deny=tuple(tuple(r) for r in self.deny),
            allow=tuple(tuple(r) for r in self.allow),
            prefix_match=self.prefix_match,
            grammars=merged(extra) if extra else BUILTIN_GRAMMARS,
        )


def _check_network_entry(entry: str) -> str:
    from pi_sandbox_plugin.network.rules import parse_rule

    parse_rule(entry, "allow", "check")  # ValueError: pydantic names the key
    return entry


NetworkEntry = Annotated[StrictStr, pydantic.AfterValidator(_check_network_entry)]
"""One ``allow``/``deny`` entry: host, ``*.suffix``, IP or CIDR, with an optional ``:port``."""

NETWORK_BACKENDS = ("bwrap", "container")
"""The backends that enforce ``[sandbox.network] mode = "allow-list"``."""


class NetworkConfig(_Model):
    """``[sandbox.network]``: ``mode`` (``"off"``: no network, the default; ``"allow-list"``:
    only through pi's proxy, to what the lists allow; ``"on"``: the host's network), the
    ``allow`` and ``deny`` entries (see :mod:`pi_sandbox_plugin.network.rules`) and what a
    destination on neither list gets (``unknown``: ``"deny"`` or ``"ask"``)."""

    mode: Literal["off", "allow-list", "on"] = "off"
    allow: list[NetworkEntry] = []
    deny: list[NetworkEntry] = []
    unknown: Literal["deny", "ask"] = "deny"


class BwrapConfig(_Model):
    """``[sandbox.bwrap]``: ``network`` (default off), the ``bwrap`` program, the ``shell`` run
    inside and ``extra_args`` for bwrap."""

    network: StrictBool = False
    bwrap: StrictStr = "bwrap"
    shell: StrictStr = "/bin/bash"
    extra_args: list[StrictStr] = []


class SshConfig(_Model):
    """``[sandbox.ssh]``: where and how to connect; ``remote_cwd`` is what the session cwd maps
    to; ``options`` are ``-o`` options of the OpenSSH client; ``env`` names local variables
    sent to the remote command (nothing else of this machine's environment is sent)."""

    host: StrictStr = ""
    port: StrictInt = pydantic.Field(default=22, ge=1, le=65535)
    user: StrictStr | None = None
    identity_file: StrictStr | None = None
    remote_cwd: StrictStr = ""
    options: list[StrictStr] = []
    shell: StrictStr = ""
    env: list[StrictStr] = []


class ContainerConfig(_Model):
    """``[sandbox.container]``: a docker-compatible ``cli``; exec into ``container`` or start one
    from ``image`` with the workspace mounted at ``workdir``; ``cli_args`` are global flags of the
    CLI, ``run_args`` extra flags of ``run``; ``env`` names local variables passed into the
    container (nothing else of this machine's environment is)."""

    cli: StrictStr = "podman"
    container: StrictStr = ""
    image: StrictStr = ""
    workdir: StrictStr = "/work"
    cli_args: list[StrictStr] = []
    run_args: list[StrictStr] = []
    env: list[StrictStr] = []


class RayConfig(_Model):
    """``[sandbox.ray]``: the cluster ``address`` (``"auto"``, ``"HOST:PORT"``,
    ``"ray://HOST:PORT"`` or ``"local"``); where a session's actor goes (``resources``: custom
    resources a node must offer, ``labels``: node labels it must have, ``num_cpus`` it
    reserves); its ``runtime_env``; ``workspace`` (a directory on the node, ``""``: a new one
    per session, removed at the end) and ``ship`` (``"cwd"``, a directory or a tar archive on
    this machine to unpack there; ``""``: nothing); ``env`` names local variables passed to the
    commands; ``lost_after`` (seconds an unanswered ping means the node or actor is lost),
    ``start_timeout`` (seconds to place and start the actor). See
    :mod:`pi_sandbox_plugin.backends.ray`."""

    address: StrictStr = "auto"
    resources: dict[StrictStr, Annotated[float, pydantic.Field(gt=0, strict=True)]] = {}
    labels: dict[StrictStr, StrictStr] = {}
    num_cpus: Annotated[float, pydantic.Field(ge=0, strict=True)] = 0
    runtime_env: dict[StrictStr, Any] = {}
    workspace: StrictStr = ""
    ship: StrictStr = ""
    env: list[StrictStr] = []
    lost_after: Annotated[float, pydantic.Field(gt=0, strict=True)] = 10.0
    start_timeout: Annotated[float, pydantic.Field(gt=0, strict=True)] = 120.0


class ClaudeHooksConfig(pydantic.BaseModel):
    """``[sandbox.claude_hooks]``: Claude Code hooks, run unchanged. ``settings``: Claude Code
    settings files whose ``hooks`` section is read (relative to the session cwd); ``PreToolUse``
    and ``PostToolUse``: the same structure inline (``[[sandbox.claude_hooks.PreToolUse]]`` with
    ``matcher`` and ``hooks = [{type = "command", command = "...", timeout = 60}]``, checked by
    :mod:`pi_sandbox_plugin.interop.claude_hooks`); ``on_error``: what a hook that fails
    (exit status
    other than 0 and 2, timeout, unreadable output) does: ``"deny"`` (the default: fail closed)
    or ``"continue"`` (Claude Code's behaviour)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    settings: list[StrictStr] = []
    on_error: Literal["deny", "continue"] = "deny"
    pre_tool_use: list[dict[StrictStr, Any]] = pydantic.Field(default=[], alias="PreToolUse")
    post_tool_use: list[dict[StrictStr, Any]] = pydantic.Field(default=[], alias="PostToolUse")

    def inline(self) -> dict[str, Any]:
        """The inline hooks as a Claude Code ``hooks`` section."""
        hooks: dict[str, Any] = {}
        if self.pre_tool_use:
            hooks["PreToolUse"] = self.pre_tool_use
        if self.post_tool_use:
            hooks["PostToolUse"] = self.post_tool_use
        return hooks


class CodexRulesConfig(_Model):
    """``[sandbox.codex_rules]``: Codex ``.rules`` files (Starlark ``prefix_rule``), relative
    to the session cwd, loaded by :mod:`pi_sandbox_plugin.interop.codex_rules`."""

    files: list[StrictStr] = []


class AuditConfig(_Model):
    """``[sandbox.audit]``: ``path`` of the audit log (JSON Lines, relative to the session
    cwd; ``pi ... --audit FILE`` takes precedence) and ``on_error``: what a call whose decision
    cannot be written to it gets (``"deny"``, the default, or ``"allow"``; also for the log of
    ``--audit``)."""

    path: StrictStr = pydantic.Field(min_length=1)
    on_error: Literal["deny", "allow"] = "deny"


class SandboxConfig(_Model):
    """``[sandbox]``: the ``backend`` and its table, the ``policy`` (``None`` when the file
    has no ``[sandbox.policy]``: no command policy), Claude Code hooks, Codex rules, the audit
    log, and ``ask``: what a call that needs a person's approval gets when nobody can be asked
    (no terminal, no approval callback): ``"deny"`` (the default) or ``"allow"``."""

    backend: Literal["local", "bwrap", "ssh", "container", "ray"] = "local"
    policy: PolicyConfig | None = None
    ask: Literal["deny", "allow"] = "deny"
    claude_hooks: ClaudeHooksConfig | None = None
    codex_rules: CodexRulesConfig | None = None
    audit: AuditConfig | None = None
    network: NetworkConfig | None = None
    bwrap: BwrapConfig = BwrapConfig()
    ssh: SshConfig = SshConfig()
    container: ContainerConfig = ContainerConfig()
    ray: RayConfig = RayConfig()

    @pydantic.field_validator("network", mode="before")
    @classmethod
    def _network_table(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(
                'must be a table: [sandbox.network] mode = "off", "allow-list" or "on"'
            )
        return value

    @property
    def network_mode(self) -> Literal["off", "allow-list", "on"]:
        """The effective network mode: ``[sandbox.network] mode``, else ``"on"``/``"off"`` from
        ``[sandbox.bwrap] network``."""
        if self.network is not None:
            return self.network.mode
        return "on" if self.bwrap.network else "off"


def _network_problem(config: SandboxConfig) -> tuple[str, str] | None:
    """(key, problem) for a ``[sandbox.network]`` the configuration cannot honour."""
    network = config.network
    if network is None:
        return None
    if "network" in config.bwrap.model_fields_set and config.network_mode != (
        "on" if config.bwrap.network else "off"
    ):
        return (
            "bwrap.network",
            f'contradicts sandbox.network.mode = "{network.mode}": remove sandbox.bwrap.network',
        )
    if network.mode == "allow-list" and config.backend not in NETWORK_BACKENDS:
        can = " or ".join(f'"{name}"' for name in NETWORK_BACKENDS)
        return (
            "network.mode",
            f'"allow-list" is enforced only by backend = {can}, not "{config.backend}" '
            "(its commands could reach any host)",
        )
    if (
        network.mode == "allow-list"
        and config.backend == "container"
        and not config.container.image
    ):
        return (
            "network.mode",
            '"allow-list" with backend = "container" needs sandbox.container.image (a container '
            "pi starts without a network), not an existing container",
        )
    return None


def _backend_problem(config: SandboxConfig) -> tuple[str, str] | None:
    """(key, problem) for a backend table the chosen backend cannot use."""
    if config.backend == "ssh":
        if not config.ssh.host:
            return "ssh.host", 'required when backend = "ssh"'
        if not config.ssh.remote_cwd:
            return "ssh.remote_cwd", 'required when backend = "ssh"'
        if not config.ssh.remote_cwd.startswith("/"):
            return "ssh.remote_cwd", "must be an absolute path"
    if config.backend == "container":
        if not config.container.cli:
            return "container.cli", "must not be empty"
        if bool(config.container.container) == bool(config.container.image):
            return "container", 'set exactly one of "container" and "image"'
        if not config.container.workdir.startswith("/"):
            return "container.workdir", "must be an absolute path"
    if config.backend == "ray":
        if not config.ray.address:
            return (
                "ray.address",
                'must not be empty ("auto", "HOST:PORT", "ray://HOST:PORT" or "local")',
            )
        if config.ray.workspace and not config.ray.workspace.startswith("/"):
            return "ray.workspace", "must be an absolute path on the node (or empty)"
    return None


def _run_tests(file: str, policy: PolicyConfig) -> None:
    checker = policy.command_policy()
    for expected, lines in (("deny", policy.tests.deny), ("allow", policy.tests.allow)):
        for i, line in enumerate(lines):
            decision = checker.check(line)
            if decision.decision != expected:
                raise ConfigError(
                    f"{file}: {SANDBOX_TABLE}.policy.tests.{expected}[{i}]: {line!r} is "
                    f"{'allowed' if decision.allowed else 'denied'}, expected {expected} ({decision.reason})"
                )


_CACHE: dict[tuple[str, str], SandboxConfig] = {}
_CACHE_SIZE = 64


def _validate(table: Mapping[str, Any], file: str) -> SandboxConfig:
    try:
        config = SandboxConfig.model_validate(table)
    except pydantic.ValidationError as e:
        raise ConfigError(format_config_error(file, SANDBOX_TABLE, e, show_value=False)) from None
    problem = _backend_problem(config) or _network_problem(config)
    if problem is not None:
        raise ConfigError(f"{file}: {SANDBOX_TABLE}.{problem[0]}: {problem[1]}")
    if config.policy is not None:
        _run_tests(file, config.policy)
    return config


def load_sandbox_config(
    config: Mapping[str, Any], path: str | os.PathLike[str] | None = None
) -> SandboxConfig | None:
    """The validated ``[sandbox]`` table of ``config`` (the loaded TOML dict), or ``None``
    without one (then the plugin changes nothing).

    ``path`` is the file the dict came from, for messages (default: the file ``pi`` loaded it
    from, :func:`pi_core.config_file`; ``pi.toml`` when unknown). Raises
    :class:`~pi_core._errors.ConfigError` (``FILE: sandbox.KEY: problem``) for a bad value, an
    unknown key, a backend table the chosen backend cannot use, or a line of
    ``[sandbox.policy.tests]`` that the policy does not decide as listed. Results are cached by
    the table's content, so calling this for every tool call is cheap.
    """
    if SANDBOX_TABLE not in config:
        return None
    file = os.fspath(path) if path is not None else config_file(config)
    table = config[SANDBOX_TABLE]
    if not isinstance(table, Mapping):
        raise ConfigError(f"{file}: {SANDBOX_TABLE}: must be a table ([{SANDBOX_TABLE}])")
    key = (json.dumps(table, sort_keys=True, default=repr), file)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _validate(table, file)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = cached
    return cached


def config_source(config: Mapping[str, Any], cwd: str | os.PathLike[str]) -> str | None:
    """The absolute path of the ``pi.toml`` that pi finds from ``cwd`` when its content is
    ``config`` (so messages can name it), else ``None`` (e.g. ``pi --config FILE``: the hooks
    receive the loaded dict, not the file it came from)."""
    from pi_core import find_config

    found = find_config(os.fspath(cwd))
    if found is None:
        return None
    try:
        with open(found, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, ValueError):  # TOMLDecodeError, or over 4,300 digits
        return None
    return str(found) if data == config else None


def load_session_sandbox_config(
    config: Mapping[str, Any], cwd: str | os.PathLike[str]
) -> SandboxConfig | None:
    """:func:`load_sandbox_config` for a session in ``cwd``: a
    :class:`~pi_core._errors.ConfigError` names the file by its absolute path when
    :func:`config_source` finds it (``/abs/pi.toml: sandbox.KEY: problem``), else ``pi.toml``."""
    try:
        return load_sandbox_config(config)
    except ConfigError:
        source = config_source(config, cwd)
        if source is None:
            raise
        return load_sandbox_config(config, source)


__all__ = [
    "AuditConfig",
    "BwrapConfig",
    "ClaudeHooksConfig",
    "CodexRulesConfig",
    "ContainerConfig",
    "GrammarConfig",
    "NetworkConfig",
    "PolicyConfig",
    "PolicyTests",
    "RayConfig",
    "SandboxConfig",
    "SshConfig",
    "config_source",
    "load_sandbox_config",
    "load_session_sandbox_config",
]
