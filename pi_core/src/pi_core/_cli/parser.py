"""The argument parser of ``pi``: global options, then a command.

Usage errors never print a usage block or a traceback: :class:`PiArgumentParser` raises
:class:`UsageError` with argparse's one-line message, which ``main`` prints as
``pi: error: MESSAGE`` and turns into exit status 2. ``--help`` prints the help on stdout and
exits 0 through :class:`ParserExit` (``main`` returns the status instead of calling
``sys.exit``, so tests can call ``main([...])``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any, NoReturn

from pi_core._errors import PiError

if TYPE_CHECKING:
    from pi_core._plugins.contexts import PluginCommand


class UsageError(PiError):
    """The command line cannot be used (unknown option, missing argument, invalid JSON, a
    missing file): exit status 2 with one line on stderr."""


class ParserExit(Exception):
    """argparse wanted to exit (``--help``, ``--version``): ``status`` is the exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class PiArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises instead of exiting (subparsers inherit the class)."""

    def __init__(self, *args: Any, stdout: IO[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        """argparse's error hook: one line, no usage block."""
        raise UsageError(" ".join(message.split()))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """argparse's exit hook (after ``--help``): raise :class:`ParserExit`."""
        if message:
            raise UsageError(" ".join(message.split()))
        raise ParserExit(status)

    def print_help(self, file: Any = None) -> None:
        """Help goes to the stdout ``main`` was given, sanitised (plugin commands add their
        own help texts)."""
        from pi_core._cli.terminal import sanitise

        out = file if file is not None else self._stdout
        if out is None:
            import sys

            out = sys.stdout
        out.write(sanitise(self.format_help()))


DESCRIPTION = (
    "Run model tool calls through pi's tool pipeline: list plugins and tools, call one tool, "
    "replay and verify recorded sessions, run the agent loop against a model."
)

EPILOG = (
    "exit status: 0 success; 1 the tool result isError (pi call), the run ended with a failed "
    "model call (pi run), a policy denies (pi policy check), paths were left alone (pi rewind); "
    "2 unusable input (invalid JSON, a missing file, an unknown option, a bad config file, a "
    "plugin that fails to load, a missing API key), one line on stderr; 3 an internal error, "
    "with the traceback; 4 a person must decide (pi policy check: ask); 130 interrupted; "
    "141 stdout was closed early."
)


BUILTIN_COMMANDS = (
    "plugins",
    "tools",
    "call",
    "replay",
    "run",
    "checkpoints",
    "rewind",
    "config",
    "export",
)
"""The commands of the core; plugins add others through ``pi_register_commands``."""


def _whole_number(minimum: int) -> Callable[[str], int]:
    """The type of an argument that must be a whole number of at least ``minimum``
    (``--parallel N``: 1, ``--max-bytes N``: 0)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {text!r}")
        return value

    return parse


_positive_int = _whole_number(1)
_non_negative_int = _whole_number(0)


class _VersionAction(argparse.Action):
    """``pi --version``: the versions, read from the installed metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None
    ) -> NoReturn:
        from pi_core._cli.terminal import sanitise
        from pi_core._plugins.manager import version_lines

        out = getattr(parser, "_stdout", None)
        if out is None:
            import sys

            out = sys.stdout
        out.write(sanitise("".join(f"{line}\n" for line in version_lines())))
        raise ParserExit(0)


def build_parser(
    stdout: IO[str] | None = None, extra_commands: Iterable[PluginCommand] = ()
) -> PiArgumentParser:
    """The full parser: ``pi [--config FILE] [--no-plugin NAME]... [-p MODULE]... COMMAND``,
    with the plugin commands ``extra_commands`` after the built-in ones."""
    parser = PiArgumentParser(
        prog="pi", description=DESCRIPTION, epilog=EPILOG, stdout=stdout, allow_abbrev=False
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration file (default: pi.toml in the working directory or a parent)",
    )
    parser.add_argument(
        "--no-plugin",
        metavar="NAME",
        action="append",
        default=[],
        dest="no_plugin",
        help="do not load the plugin NAME (repeatable; also PI_DISABLED_PLUGINS=a,b)",
    )
    parser.add_argument(
        "-p",
        metavar="MODULE",
        action="append",
        default=[],
        dest="plugins",
        help="load the plugin MODULE (an entry-point name or an import path; repeatable)",
    )
    parser.add_argument(
        "--trace-hooks",
        action="store_true",
        dest="trace_hooks",
        help="print every hook implementation call to stderr: hook, plugin, duration, result "
        "(also PI_DEBUG_HOOKS=1)",
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print the versions of pi's distributions and of each installed plugin, and exit",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def command(name: str, help: str) -> PiArgumentParser:
        sub: PiArgumentParser = commands.add_parser(
            name, help=help, description=help, stdout=stdout, allow_abbrev=False
        )
        return sub

    plugins = command("plugins", "list the loaded plugins; install, uninstall or create a plugin")
    plugins.add_argument("--json", action="store_true", help="print a JSON list")
    plugin_actions = plugins.add_subparsers(
        dest="plugins_action", metavar="ACTION", title="actions"
    )

    def plugin_action(name: str, help: str) -> PiArgumentParser:
        sub: PiArgumentParser = plugin_actions.add_parser(
            name, help=help, description=help, stdout=stdout, allow_abbrev=False
        )
        return sub

    install = plugin_action(
        "install",
        "install plugin distributions into the environment pi runs in (with uv when pi was "
        "installed with uv, else with pip)",
    )
    install.add_argument(
        "specs",
        metavar="SPEC",
        nargs="*",
        help="what the installer accepts: a name, name==version, a folder, a wheel, a URL",
    )
    install.add_argument(
        "-e",
        "--editable",
        metavar="PATH",
        action="append",
        default=[],
        help="install the project in PATH in editable mode (repeatable)",
    )
    install.add_argument(
        "-U", "--upgrade", action="store_true", help="upgrade to the newest versions"
    )
    uninstall = plugin_action(
        "uninstall", "uninstall the distributions of installed plugins (pi's own stay)"
    )
    uninstall.add_argument(
        "names", metavar="NAME", nargs="+", help="a plugin's name or its distribution's name"
    )
    new = plugin_action(
        "new",
        "write a new plugin distribution: pyproject.toml with the entry point, a tool, a "
        "policy hook and tests",
    )
    new.add_argument(
        "name",
        metavar="NAME",
        help="the plugin's name (lower case letters, digits and _): distribution pi-NAME, "
        "package pi_NAME",
    )
    new.add_argument(
        "--dir",
        metavar="DIR",
        default=".",
        help="the folder to create pi-NAME in (default: the working directory)",
    )

    tools = command("tools", "list the registered tools with the schema the model sees")
    tools.add_argument("--cwd", metavar="DIR", help="session working directory (default: .)")
    tools.add_argument("--json", action="store_true", help="print a JSON list")

    call = command("call", "run one tool call through the whole pipeline")
    call.add_argument("tool", metavar="TOOL", help="tool name")
    call.add_argument(
        "arguments",
        metavar="ARGS_JSON",
        help="the call's arguments as JSON; - reads them from stdin, @FILE from FILE",
    )
    call.add_argument("--cwd", metavar="DIR", help="session working directory (default: .)")
    call.add_argument("--id", metavar="ID", default="call-1", help="tool call id (default: call-1)")
    call.add_argument(
        "--json", action="store_true", help="print the ToolResultMessage as one JSON line"
    )
    call.add_argument(
        "--audit",
        metavar="FILE",
        help="append every policy decision to FILE as JSON Lines (the audit log)",
    )

    replay = command(
        "replay", "execute the tool calls of recorded assistant messages as the loop would"
    )
    replay.add_argument(
        "file", metavar="FILE", help="JSONL of assistant messages, or a Pi session file"
    )
    replay.add_argument(
        "more_files",
        metavar="FILE",
        nargs="*",
        default=[],  # not required: a missing FILE is reported once (the first FILE)
        help="more recorded sessions, each replayed in its own session (see --parallel)",
    )
    replay.add_argument(
        "--parallel",
        metavar="N",
        type=_positive_int,
        help="replay the FILEs as separate sessions, N at a time: a progress bar on a terminal, "
        "then a summary table (--json: one line per FILE)",
    )
    replay.add_argument("--cwd", metavar="DIR", help="session working directory (default: .)")
    replay.add_argument(
        "--json", action="store_true", help="print each ToolResultMessage as a JSON line"
    )
    replay.add_argument(
        "--audit",
        metavar="FILE",
        help="append every policy decision to FILE as JSON Lines (the audit log)",
    )
    _add_report_option(replay)
    replay.add_argument(
        "--events",
        action="store_true",
        help="print every agent event as JSON Lines (from the first tool execution on)",
    )
    replay.add_argument(
        "--sequential",
        action="store_true",
        help="run every batch sequentially (nested calls too)",
    )
    replay.add_argument(
        "--exposure",
        metavar="NAME=LEVEL,...",
        action="append",
        default=[],
        help="set tools' exposure (direct, model-only, codemode, deferred, hidden; repeatable)",
    )
    replay.add_argument(
        "--tool-search",
        action="store_true",
        dest="tool_search",
        help="activate the tool_search tool (it loads deferred tools)",
    )
    replay.add_argument(
        "--codemode",
        action="store_true",
        help="activate the codemode tool",
    )
    replay.add_argument(
        "--codemode-python",
        action="store_true",
        dest="codemode_python",
        help="activate the codemode_python tool",
    )
    replay.add_argument(
        "--respect-replay-policy",
        action="store_true",
        dest="respect_replay_policy",
        help='do not re-execute tools declared replay="never" (bash, write, edit): report the '
        "recorded result instead (a notice on stderr)",
    )
    replay.add_argument(
        "--verify",
        action="store_true",
        help="compare each executed result with the recorded one; print an agreement table",
    )
    replay.add_argument(
        "--seed-from-reads",
        action="store_true",
        help="(--verify) create missing files from recorded full-file read results first",
    )
    replay.add_argument(
        "--bash",
        choices=["run", "recorded"],
        default="run",
        help="(--verify) run bash calls (default) or answer them from the recording",
    )
    replay.add_argument(
        "--map-cwd",
        metavar="OLD=NEW",
        action="append",
        default=[],
        help="(--verify) map the recorded working directory OLD to NEW (repeatable; default: "
        "the session header's cwd to --cwd)",
    )

    run = command("run", "run the agent loop against a model (default: the embedded demo)")
    run.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="the user's request (optional with the embedded demo)",
    )
    run.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help="scripted:FILE, openai:MODEL, anthropic:MODEL or a plugin's provider "
        "(default: the embedded demo session in a copy of docs/examples/demo)",
    )
    run.add_argument("--tools", metavar="a,b,...", help="only these tools (default: all)")
    run.add_argument("--max-turns", metavar="N", type=int, help="stop after N turns")
    run.add_argument(
        "--cwd",
        metavar="DIR",
        help="working directory (default: .; the demo copies its project there, default a "
        "new temporary folder)",
    )
    run.add_argument("--json", action="store_true", help="print every event as JSON Lines")
    run.add_argument("--session", metavar="FILE", help="write a Pi session file (v3)")
    run.add_argument(
        "--audit",
        metavar="FILE",
        help="append every policy decision to FILE as JSON Lines (the audit log)",
    )
    _add_report_option(run)
    run.add_argument("--base-url", metavar="URL", help="the provider's base URL")
    run.add_argument(
        "--strict-tools",
        action="store_true",
        help="the provider supports strict tools: send the tools that ask for JSON-schema "
        "constrained sampling strict",
    )
    checkpoints = command(
        "checkpoints",
        "list a session's checkpoints: what each call changed (default: the latest session)",
    )
    checkpoints.add_argument(
        "session",
        metavar="SESSION",
        nargs="?",
        help="a session id or a unique prefix of it; prune: remove the oldest sessions",
    )
    checkpoints.add_argument(
        "--cwd",
        metavar="DIR",
        help="the workspace (default: ., or the folder above it that has checkpoints)",
    )
    checkpoints.add_argument("--json", action="store_true", help="print JSON")
    checkpoints.add_argument(
        "--sessions", action="store_true", help="list the recorded sessions of the workspace"
    )
    checkpoints.add_argument(
        "--all", action="store_true", help="(prune) remove every session that has ended"
    )
    checkpoints.add_argument(
        "--max-bytes",
        metavar="N",
        type=_non_negative_int,
        dest="max_bytes",
        help="(prune) keep at most N bytes (default: [checkpoints] max_bytes)",
    )

    rewind = command("rewind", "restore the workspace to how it was before a call or a turn")
    rewind.add_argument(
        "session", metavar="SESSION", nargs="?", help="a session id or a unique prefix of it"
    )
    rewind.add_argument("--to", metavar="CALL_ID", help="to just before the tool call CALL_ID")
    rewind.add_argument("--turn", metavar="N", type=int, help="to the start of turn N")
    rewind.add_argument("--undo", action="store_true", help="take back the latest rewind")
    rewind.add_argument(
        "--dry-run", action="store_true", dest="dry_run", help="print what would change"
    )
    rewind.add_argument(
        "--files",
        metavar="PATH",
        nargs="+",
        help="restore only these paths (and what is below them)",
    )
    rewind.add_argument(
        "--force",
        action="store_true",
        help="also overwrite files changed outside pi since the checkpoint",
    )
    rewind.add_argument(
        "--cwd",
        metavar="DIR",
        help="the workspace (default: ., or the folder above it that has checkpoints)",
    )
    rewind.add_argument("--json", action="store_true", help="print the result as JSON")
    config = command(
        "config", "show the configuration in effect: the config file and every file pi loaded"
    )
    config.add_argument("--cwd", metavar="DIR", help="session working directory (default: .)")
    config.add_argument("--json", action="store_true", help="print a JSON object")

    export = command(
        "export", "write a session as one self-contained HTML report (opens from disk, offline)"
    )
    export.add_argument(
        "file", metavar="SESSION", help="a Pi session file (pi's or Pi 1.6's) or message JSONL"
    )
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the HTML file to write (default: SESSION's name with .html, in the current folder)",
    )
    export.add_argument(
        "--audit",
        metavar="FILE",
        help="an audit log (JSON Lines) whose policy decisions are shown beside their calls",
    )
    for extra in extra_commands:
        extra.configure(command(extra.name, extra.help))
    return parser


def _add_report_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--report",
        metavar="FILE",
        help="at the end, write the run as an HTML report to FILE (see pi export)",
    )


def global_options(argv: Sequence[str]) -> tuple[argparse.Namespace, str | None]:
    """The global options of ``argv`` and its command word (``None`` when there is none),
    found before the full parse so that plugin commands can be loaded first. Input the full
    parser will reject gives the defaults and ``None``; the full parse then reports it."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    pre.add_argument("--config")
    pre.add_argument("--no-plugin", action="append", default=[], dest="no_plugin")
    pre.add_argument("-p", action="append", default=[], dest="plugins")
    pre.add_argument("--trace-hooks", action="store_true", dest="trace_hooks")
    pre.add_argument("command", nargs="?")
    pre.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        options, _ = pre.parse_known_args(list(argv))
    except (argparse.ArgumentError, SystemExit):
        return argparse.Namespace(config=None, no_plugin=[], plugins=[], trace_hooks=False), None
    command = options.command
    del options.command, options.rest
    return options, command


__all__ = [
    "BUILTIN_COMMANDS",
    "ParserExit",
    "PiArgumentParser",
    "UsageError",
    "build_parser",
    "global_options",
]
