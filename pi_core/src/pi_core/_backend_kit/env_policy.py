"""The environment policy of commands: the ``[env]`` table of ``pi.toml`` (after Codex's
``shell_environment_policy``), computed here and nowhere else.

::

    [env]
    inherit = "core"                  # "all" (default), "core" or "none"
    ignore_default_excludes = false   # true: also pass *KEY*, *SECRET*, *TOKEN*, *PASSWORD*
    exclude = ["AWS_*", "*_SESSION"]  # globs (case-insensitive) dropped from what is inherited
    set = { CI = "1" }                # variables set (after exclude)
    include_only = ["PATH", "LC_*"]   # globs: when given, every other variable is dropped

:meth:`EnvPolicy.apply` builds the environment of a command from this process's environment in
this order: (1) the ``inherit`` set — ``all`` the whole environment, ``core`` only
:data:`CORE_VARIABLES` (and ``LC_*``), ``none`` nothing; (2) the :data:`DEFAULT_EXCLUDES` removed
unless ``ignore_default_excludes``; (3) ``exclude`` removed; (4) ``set`` added; (5) with
``include_only``, every variable that matches none of its globs removed. Globs are
:func:`fnmatch.fnmatchcase` patterns compared case-insensitively. Variables pi itself sets for a
command (the ``PI_*`` session variables) are added after the policy.

**Port decision.** Pi passes its whole environment to every command. By default pi drops the
variables whose names match :data:`DEFAULT_EXCLUDES` (API keys, cloud secrets, tokens,
passwords), so that a model-run command cannot print them; ``ignore_default_excludes = true``
restores Pi's copy-everything.

**Remote backends** (ssh, containers) never send this machine's environment: the remote command
keeps its own and gets only what :func:`remote_environment` selects — the variables pi (or a
``pi_bash_spawn_context`` hook, or ``[env] set`` with a value that differs from the local one)
set or changed, plus the variables the backend's ``env`` list names.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pydantic

from pi_core._config import config_file, format_config_error
from pi_core._errors import ConfigError

ENV_TABLE = "env"
"""The top-level table of ``pi.toml`` that holds the policy."""

CORE_VARIABLES = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "USERNAME",
    "TMPDIR",
    "TEMP",
    "TMP",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
)
"""What ``inherit = "core"`` keeps (globs): Codex's core set (``HOME``, ``LOGNAME``, ``PATH``,
``SHELL``, ``USER``, ``USERNAME``, ``TMPDIR``, ``TEMP``, ``TMP``) plus the locale (``LANG``,
``LANGUAGE``, ``LC_*``), ``TERM`` and ``TZ``."""

DEFAULT_EXCLUDES = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")
"""Globs (case-insensitive) never inherited unless ``ignore_default_excludes = true``."""


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """``name`` matches one of the globs ``patterns``, case-insensitively."""
    folded = name.upper()
    return any(fnmatch.fnmatchcase(folded, pattern.upper()) for pattern in patterns)


class EnvPolicy(pydantic.BaseModel):
    """The validated ``[env]`` table (see the module docstring). Unknown keys are errors."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    inherit: Literal["all", "core", "none"] = "all"
    """Which variables of this process start the environment."""

    ignore_default_excludes: pydantic.StrictBool = False
    """Also inherit the variables matching :data:`DEFAULT_EXCLUDES`."""

    exclude: tuple[pydantic.StrictStr, ...] = ()
    """Globs of inherited variables to drop."""

    set_: dict[pydantic.StrictStr, pydantic.StrictStr] = pydantic.Field(
        default_factory=dict, alias="set"
    )
    """Variables to set (``[env] set`` / ``[env.set]``)."""

    include_only: tuple[pydantic.StrictStr, ...] = ()
    """When not empty: only variables matching one of these globs are kept."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> EnvPolicy:
        """The policy of a loaded config (the whole TOML dict; ``[env]`` absent: the default).
        :class:`~pi_core.ConfigError` naming the file and key (``/abs/pi.toml: env.KEY:
        reason``; ``pi.toml`` for a dict that came from no file) for a bad table."""
        table = (config or {}).get(ENV_TABLE, {})
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"{config_file(config)}: {ENV_TABLE}: must be a table ([{ENV_TABLE}])"
            )
        try:
            return cls.model_validate(dict(table))
        except pydantic.ValidationError as e:
            raise ConfigError(format_config_error(config_file(config), ENV_TABLE, e)) from None

    def apply(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a command built from ``environ`` (default: ``os.environ``)."""
        source = os.environ if environ is None else environ
        if self.inherit == "all":
            env = dict(source)
        elif self.inherit == "core":
            env = {k: v for k, v in source.items() if matches_any(k, CORE_VARIABLES)}
        else:
            env = {}
        if not self.ignore_default_excludes:
            env = {k: v for k, v in env.items() if not matches_any(k, DEFAULT_EXCLUDES)}
        if self.exclude:
            env = {k: v for k, v in env.items() if not matches_any(k, self.exclude)}
        env.update(self.set_)
        if self.include_only:
            env = {k: v for k, v in env.items() if matches_any(k, self.include_only)}
        return env


def command_environment(
    config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``EnvPolicy.from_config(config).apply(environ)``: the environment a command starts from."""
    return EnvPolicy.from_config(config).apply(environ)


def remote_environment(
    env: Mapping[str, str] | None,
    pass_names: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What a remote backend sends of ``env`` (the environment the bash tool built): the
    variables absent from this process's environment ``environ`` (default ``os.environ``) or
    with another value there (pi's ``PI_*`` variables, ``[env] set``, hook changes), plus the
    variables named in ``pass_names`` (exact names; from ``env``, else from ``environ``). Never
    the rest of this machine's environment."""
    local = os.environ if environ is None else environ
    sent = {k: v for k, v in (env or {}).items() if local.get(k) != v}
    for name in pass_names:
        if env is not None and name in env:
            sent[name] = env[name]
        elif name in local:
            sent[name] = local[name]
    return sent


__all__ = [
    "CORE_VARIABLES",
    "DEFAULT_EXCLUDES",
    "ENV_TABLE",
    "EnvPolicy",
    "command_environment",
    "matches_any",
    "remote_environment",
]
