"""What every ``pi`` command gets: :class:`CommandContext`, the parsed arguments and the output
streams, with the config, plugin manager and session loaded on first use."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from pi_core._cli.parser import UsageError
from pi_core._config import PiConfig, load_config
from pi_core._errors import PiError, PluginError
from pi_core._loop.config import LoopConfig
from pi_core._plugins.manager import PiPluginManager, make_plugin_manager
from pi_core._session.audit import AuditLog

if TYPE_CHECKING:
    from pi_core._cli.render import Renderer
    from pi_core._plugins.session import Session


@dataclass
class CommandContext:
    """What a command gets: the parsed ``args`` and the output streams. The config and the
    plugin manager are loaded on first use (config first, so a bad file is reported before a
    plugin is imported)."""

    args: argparse.Namespace
    stdout: IO[str]
    stderr: IO[str]
    _renderer: Any = field(default=None, repr=False)
    stdin: IO[bytes] | None = None
    """The standard input ``pi`` started with, for ``pi call TOOL -`` (``None``: the process's
    own): the console script points the process's stdin at ``/dev/null`` so no tool reads the
    terminal, and keeps the original here."""
    third_party_autoload: bool | None = None
    """``False``: autoload only the plugins of pi's own distributions
    (``pi_core.testing.run_pi``), other installed plugins load when named (``-p NAME``,
    ``PI_PLUGINS``); ``None``: ``PI_DISABLE_THIRD_PARTY_AUTOLOAD`` decides."""

    @cached_property
    def config(self) -> PiConfig:
        """``--config FILE``, else the ``pi.toml`` found from the session's working directory
        upward: the command's ``--cwd DIR`` when it has one (a client that starts pi elsewhere
        still gets the project's config), else the directory pi was started in."""
        return load_config(self.args.config, cwd=getattr(self.args, "cwd", None) or None)

    @cached_property
    def plugin_manager(self) -> PiPluginManager:
        """Installed plugins minus ``--no-plugin``, plus ``-p MODULE``."""
        self.config  # noqa: B018 - load (and validate) the config before importing plugins
        return self.unchecked_plugin_manager()

    def unchecked_plugin_manager(self) -> PiPluginManager:
        """:attr:`plugin_manager` before the config is loaded, for a plugin's command: its
        arguments (``--cwd``, which decides the ``pi.toml``) are known only once the plugins
        have added them. Kept as :attr:`plugin_manager`."""
        if "plugin_manager" not in self.__dict__:
            self.__dict__["plugin_manager"] = self._make_plugin_manager()
        return cast(PiPluginManager, self.__dict__["plugin_manager"])

    def _make_plugin_manager(self) -> PiPluginManager:
        return make_plugin_manager(
            block=self.args.no_plugin,
            plugins=self.args.plugins,
            third_party_autoload=self.third_party_autoload,
            trace_hooks=bool(getattr(self.args, "trace_hooks", False)),
            trace_stream=self.stderr,
        )

    @property
    def renderer(self) -> Renderer:
        """Human-readable output on stdout (rich on a terminal)."""
        if self._renderer is None:
            from pi_core._cli.render import Renderer

            self._renderer = Renderer(self.stdout)
        return self._renderer

    def cwd(self) -> str:
        """``--cwd DIR`` as an absolute path (default: the working directory); a missing folder
        is a usage error."""
        given = getattr(self.args, "cwd", None)
        if given is None:
            return os.getcwd()
        path = Path(given)
        if not path.is_dir():
            reason = "not a directory" if path.exists() else "no such directory"
            raise UsageError(f"--cwd {given}: {reason}")
        return os.path.abspath(given)

    def session(self, cwd: str, host: str) -> Session:
        """The session (tools and hooks) of ``cwd`` from the loaded plugins, for the command
        ``host`` (``"call"``, ``"replay"``, ``"run"``, ``"tools"``)."""
        from pi_core._plugins.session import build_session

        pm = self.plugin_manager
        approval = None
        if host in ("run", "call"):
            from pi_core._cli.approval_prompt import terminal_approver

            approval = terminal_approver(self.stdin, self.stderr)
        audit = getattr(self.args, "audit", None)
        if audit is not None:
            self._check_audit(audit, cwd)
        self._telemetry(pm, host)
        try:
            return build_session(
                pm, cwd, self.config.data, host=host, approval=approval, audit=audit
            )
        except PiError:
            raise
        except Exception as e:  # a plugin's hook raised while setting the session up
            raise PluginError(
                f"a plugin failed while setting up tools: {type(e).__name__}: {e}"
            ) from e

    def _telemetry(self, pm: Any, host: str) -> None:
        """Register the OpenTelemetry plugin when ``[telemetry]`` or the ``OTEL_*`` variables
        turn it on (:mod:`pi_core._report.telemetry`; nothing of OpenTelemetry is imported
        otherwise). A ``[telemetry]`` table pi cannot use is a usage error; without the
        ``otel`` extra installed, one line says how to get it."""
        if "telemetry" not in self.config.data and not any(
            name.startswith("OTEL_EXPORTER_OTLP") for name in os.environ
        ):
            return  # off: the start-up of every command imports nothing more
        from pi_core._report.settings import TelemetryConfigError, telemetry_settings

        try:
            settings = telemetry_settings(self.config.data)
        except TelemetryConfigError as e:
            where = self.config.path if self.config.path is not None else "pi.toml"
            raise UsageError(f"{where}: {e}") from None
        if settings is None:
            return
        from pi_core._report.telemetry import PLUGIN_NAME, enable_telemetry

        if pm.get_plugin(PLUGIN_NAME) is not None:
            return
        try:
            enable_telemetry(pm, settings, host)
        except ImportError:
            raise UsageError(
                "telemetry is on but OpenTelemetry is not installed: "
                "pip install 'pi-tool-core[otel]'"
            ) from None

    @staticmethod
    def _check_audit(path: str, cwd: str) -> None:
        """``--audit FILE`` must be a regular file pi can append to (created if missing): a
        usage error otherwise."""
        try:
            AuditLog.check_path(path, cwd)
        except ValueError as e:
            raise UsageError(f"--audit {path}: {e}") from None

    def loop_config(self, session: Session) -> LoopConfig:
        """A :class:`LoopConfig` with the ``[pi]`` settings, the session's hooks, tool set and
        checkpoint recorder (system messages declare tool changes)."""
        config = self.config.apply_to(LoopConfig())
        session.hooks.apply_to(config)
        config.tool_set = session.tool_set
        config.declare_tool_changes = True
        config.checkpoints = session.recorder
        return config


__all__ = ["CommandContext"]
