"""The environment policy of commands: the ``[env]`` table of ``pi.toml`` (after Codex's
``shell_environment_policy``), computed here and nowhere else.

::

    [env]
    inherit = "core"                  # "all" (default), "core" or "none"
    ignore_default_excludes = false   # true: also pass what looks like a secret (below)
    include = ["GITHUB_PAT"]          # globs: inherited even though they look like secrets
    exclude = ["AWS_*", "*_SESSION"]  # globs (case-insensitive) dropped from what is inherited
    set = { CI = "1" }                # variables set (after exclude)
    include_only = ["PATH", "LC_*"]   # globs: when given, every other variable is dropped

:meth:`EnvPolicy.apply` builds the environment of a command from this process's environment in
this order: (1) the ``inherit`` set — ``all`` the whole environment, ``core`` only
:data:`CORE_VARIABLES` (and ``LC_*``), ``none`` nothing; (2) every variable that looks like a
secret (:func:`looks_secret`) removed unless ``ignore_default_excludes`` or it matches a glob of
``include``; (3) ``exclude`` removed; (4) ``set`` added; (5) with ``include_only``, every variable
that matches none of its globs removed. Globs are :func:`fnmatch.fnmatchcase` patterns compared
case-insensitively. Variables pi itself sets for a command (the ``PI_*`` session variables) are
added after the policy.

**Secrets by name and by shape.** A variable looks like a secret when its name matches one of
:data:`DEFAULT_EXCLUDES` (``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, anywhere in the
name), when one of its name's parts (split at ``_``, ``-``, ``.`` and camel-case humps:
``NPM_CONFIG__AUTH``, ``githubPat``) is one of :data:`SECRET_NAME_PARTS` (``AUTH``, ``PAT``,
``PWD``, ``DSN``, ``CREDENTIALS``…), or when its value has the shape of one
(:data:`SECRET_VALUE_SHAPES`: a URL with a password, a PEM private key, a token with a
well-known prefix such as ``ghp_``, ``sk-``, ``xoxb-``, ``AKIA``, a JWT). The names in
:data:`NOT_SECRET_NAMES` (``PWD``, ``OLDPWD``, ``SSH_AUTH_SOCK``) are never judged by their parts.
``include`` names the variables to pass on anyway, without turning the whole filter off.

**Port decision.** Pi passes its whole environment to every command. By default pi drops the
variables that look like secrets, so that a model-run command cannot print them;
``ignore_default_excludes = true`` restores Pi's copy-everything.

**Remote backends** (ssh, containers) never send this machine's environment: the remote command
keeps its own and gets only what :func:`remote_environment` selects — the variables pi (or a
``pi_bash_spawn_context`` hook, or ``[env] set`` with a value that differs from the local one)
set or changed, plus the variables the backend's ``env`` list names.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
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

SECRET_NAME_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")
"""Words that make a name look like a secret's wherever they are in it (case-insensitive)."""

DEFAULT_EXCLUDES = tuple(f"*{word}*" for word in SECRET_NAME_WORDS)
""":data:`SECRET_NAME_WORDS` as globs: ``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``."""

SECRET_NAME_PARTS = frozenset(
    {
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "DSN",
        "PASS",
        "PASSCODE",
        "PASSPHRASE",
        "PASSWD",
        "PAT",
        "PWD",
    }
)
"""Name parts (whole parts, case-insensitive) that make a name look like a secret's:
``MYSQL_PWD``, ``GITHUB_PAT``, ``SENTRY_DSN``, ``NPM_CONFIG__AUTH``, ``DB_PASS``,
``GOOGLE_APPLICATION_CREDENTIALS`` — but not ``PATH``, ``OLDPWD``, ``COMPASS_HOME``,
``GIT_ASKPASS`` or ``GIT_AUTHOR_NAME``, where no part is one of them."""

NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
"""Names never judged by their parts: the shell's working directories, and the ssh agent's
socket (a path, not a secret; the agent is reachable as the user whatever the variable says,
and ``git``/``ssh`` over the agent need it)."""

SECRET_VALUE_SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("a URL with a password", ("://",), r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:[^\s/?#@]+@"),
    ("a PEM private key", ("-----BEGIN ",), r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    (
        "a connection string with a password or account key",
        ("assword=", "ASSWORD=", "wd=", "WD=", "Key=", "key=", "KEY="),
        r"(?:^|;)\s*(?i:password|pwd|accountkey|sharedaccesskey)=[^;\s]",
    ),
    (
        "an HTTP bearer or basic credential",
        ("Bearer ", "Basic "),
        r"\b(?:Bearer|Basic) +[A-Za-z0-9._~+/=-]{16,}",
    ),
    (
        "a GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}",
    ),
    ("a GitLab token", ("gl",), r"\bgl(?:pat|dt|rt|ptt|cbt|oas|ft|soat|imt)-[A-Za-z0-9_-]{20,}"),
    (
        "an OpenAI or Anthropic key",
        ("sk-",),
        r"\bsk-[A-Za-z0-9]{20,}|\bsk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{20,}",
    ),
    (
        "a Slack token",
        ("xox", "xapp-"),
        r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]+-[A-Za-z0-9-]{10,}",
    ),
    ("an AWS access key id", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("a Google API key", ("AIza",), r"\bAIza[A-Za-z0-9_-]{35}"),
    ("an npm token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}"),
    ("a PyPI token", ("pypi-",), r"\bpypi-[A-Za-z0-9_-]{50,}"),
    ("a JSON Web Token", ("eyJ",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\."),
    (
        "a Stripe key",
        ("_live_", "_test_", "whsec_"),
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}",
    ),
    ("a Twilio API key", ("SK",), r"\bSK[0-9a-fA-F]{32}\b"),
    ("a SendGrid key", ("SG.",), r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("a Hugging Face token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    ("a Shopify token", ("shp",), r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("a DigitalOcean token", ("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}"),
    ("a HashiCorp Vault token", ("hvs.", "hvb.", "hvr."), r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("a Databricks token", ("dapi",), r"\bdapi[a-f0-9]{32}"),
    ("a Docker Hub token", ("dckr_pat_",), r"\bdckr_pat_[A-Za-z0-9_-]{20,}"),
    ("an age secret key", ("AGE-SECRET-KEY-",), r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("an Atlassian token", ("ATATT3",), r"\bATATT3[A-Za-z0-9_=-]{20,}"),
    ("a Postman key", ("PMAK-",), r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("a Telegram bot token", (":AA",), r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}"),
)
"""``(what, anchors, regex)``: values that look like a secret whatever their variable's name,
found anywhere in the value (``Authorization: Bearer ghp_…`` inside ``GIT_CONFIG_PARAMETERS``
too). ``regex`` is tried only on a value holding one of the ``anchors`` (plain substrings), so
that an ordinary environment costs a few substring searches, not some thirty regular
expressions per variable."""

_VALUE_SHAPES = tuple((anchors, regex) for _what, anchors, regex in SECRET_VALUE_SHAPES)
_NAME_PARTS = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"
_compiled = functools.cache(re.compile)  # compiled the first time it is needed, not at start-up

_Shapes = tuple[tuple[tuple[str, ...], str], ...]


def _shapes_in(text: str) -> _Shapes:
    """The value shapes one of whose anchors is in ``text``."""
    return tuple(shape for shape in _VALUE_SHAPES if any(a in text for a in shape[0]))


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """``name`` matches one of the globs ``patterns``, case-insensitively."""
    folded = name.upper()
    return any(fnmatch.fnmatchcase(folded, pattern.upper()) for pattern in patterns)


def name_parts(name: str) -> list[str]:
    """The parts of a variable name, upper-cased: split at every character that is not a
    letter or digit, between letters and digits, and at camel-case humps
    (``NPM_CONFIG__AUTH`` → ``NPM CONFIG AUTH``; ``githubPat`` → ``GITHUB PAT``;
    ``HTTPAuth2`` → ``HTTP AUTH 2``)."""
    return [part.upper() for part in _compiled(_NAME_PARTS).findall(name)]


def looks_secret(name: str, value: str) -> bool:
    """Whether the variable ``name=value`` looks like a secret: its name holds one of
    :data:`SECRET_NAME_WORDS`, or has a part in :data:`SECRET_NAME_PARTS` (unless the name is
    one of :data:`NOT_SECRET_NAMES`), or its value has one of :data:`SECRET_VALUE_SHAPES`."""
    return _looks_secret(name, value, _shapes_in(value))


def _looks_secret(name: str, value: str, shapes: _Shapes) -> bool:
    """:func:`looks_secret`, trying only the value shapes in ``shapes``."""
    folded = name.upper()
    if any(word in folded for word in SECRET_NAME_WORDS):
        return True
    if folded not in NOT_SECRET_NAMES and not SECRET_NAME_PARTS.isdisjoint(name_parts(name)):
        return True
    for anchors, regex in shapes:
        if any(a in value for a in anchors) and _compiled(regex).search(value):
            return True
    return False


@functools.lru_cache(maxsize=4)
def _secret_names(items: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The names of ``items`` that look like secrets; remembered for the last few
    environments (pi's own rarely changes between two commands)."""
    shapes = _shapes_in("\n".join(value for _name, value in items))
    return frozenset(name for name, value in items if _looks_secret(name, value, shapes))


class EnvPolicy(pydantic.BaseModel):
    """The validated ``[env]`` table (see the module docstring). Unknown keys are errors."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    inherit: Literal["all", "core", "none"] = "all"
    """Which variables of this process start the environment."""

    ignore_default_excludes: pydantic.StrictBool = False
    """Also inherit the variables that look like secrets (:func:`looks_secret`)."""

    include: tuple[pydantic.StrictStr, ...] = ()
    """Globs of variables inherited even though they look like secrets (the way to pass one
    on without writing its value into the config)."""

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
            secret = _secret_names(tuple(env.items()))
            if secret:
                env = {
                    k: v
                    for k, v in env.items()
                    if k not in secret or (self.include and matches_any(k, self.include))
                }
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
    "NOT_SECRET_NAMES",
    "SECRET_NAME_PARTS",
    "SECRET_NAME_WORDS",
    "SECRET_VALUE_SHAPES",
    "EnvPolicy",
    "command_environment",
    "looks_secret",
    "matches_any",
    "name_parts",
    "remote_environment",
]
