"""The ``pi`` command (``docs/reference/cli.md``).

::

    pi [--config FILE] [--no-plugin NAME]... [-p MODULE]... COMMAND ...

    pi plugins [--json]
    pi tools [--cwd DIR] [--json]
    pi call TOOL ARGS_JSON|-|@FILE [--cwd DIR] [--id ID] [--json]
    pi replay FILE [--cwd DIR] [--json] [--events] [--sequential]
    pi replay --parallel N FILE... [--cwd DIR] [--json] [--sequential]
    pi replay FILE --verify [--cwd DIR] [--json] [--seed-from-reads] [--bash run|recorded]
              [--map-cwd OLD=NEW]...
    pi run [PROMPT] [--model P:M] [--tools a,b] [--max-turns N] [--cwd DIR] [--json]
           [--session FILE] [--base-url URL]
    pi checkpoints [SESSION] [--sessions] [--cwd DIR] [--json]
    pi checkpoints prune [--all] [--max-bytes N]
    pi rewind [SESSION] (--to CALL_ID | --turn N | --undo) [--dry-run] [--files PATH...]
              [--force] [--cwd DIR] [--json]

Exit status: 0 success; 1 when the result of ``pi call`` has ``isError``; 2 for input pi cannot
use (invalid JSON, a missing file or folder, an unknown option, a bad config file, a plugin that
fails to load), with exactly one line ``pi: error: ...`` on stderr and no traceback; 130 after
Ctrl-C; 141 when stdout is closed early (``pi replay ... | head``), silently; 3 for an internal
error (a bug in pi or a plugin: the traceback is printed).

:func:`main` takes the argument list and returns the exit status, so tests call
``main(["call", "echo", "{}"])``; the ``pi`` console script calls it without arguments and
exits with the status.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any, cast

from pi_core._cli.commands import cmd_call, cmd_config, cmd_plugins, cmd_tools
from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import exit_now
from pi_core._cli.parser import (
    BUILTIN_COMMANDS,
    ParserExit,
    UsageError,
    build_parser,
    global_options,
)
from pi_core._cli.terminal import SanitisedStream
from pi_core._errors import ConfigWarning, PiError
from pi_core._plugins.contexts import CommandInvocation, PluginCommand
from pi_core._plugins.facade import PluginHooks

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def run_command(ctx: CommandContext) -> int:
    """Dispatch to the command named in ``ctx.args.command``."""
    if ctx.args.command == "plugins":
        return cmd_plugins(ctx)
    if ctx.args.command == "tools":
        return cmd_tools(ctx)
    if ctx.args.command == "config":
        return cmd_config(ctx)
    if ctx.args.command == "call":
        return cmd_call(ctx)
    if ctx.args.command == "replay":
        args = ctx.args
        if not args.verify and (args.seed_from_reads or args.bash != "run" or args.map_cwd):
            raise UsageError("--seed-from-reads, --bash and --map-cwd need --verify")
        if args.parallel is not None or args.more_files:
            if args.verify or args.events:
                raise UsageError("--verify and --events replay one FILE (not with --parallel)")
            if args.report is not None:
                raise UsageError("--report replays one FILE (not with --parallel)")
            from pi_core._cli.replay_parallel import cmd_replay_parallel

            return cmd_replay_parallel(ctx)
        if args.verify:
            from pi_core._cli.verify import cmd_verify

            return cmd_verify(ctx)
        from pi_core._cli.replay import cmd_replay

        return cmd_replay(ctx)
    if ctx.args.command == "run":
        from pi_core._cli.agent_run import cmd_run

        return cmd_run(ctx)
    if ctx.args.command in ("checkpoints", "rewind"):
        from pi_core._cli.checkpoints import cmd_checkpoints, cmd_rewind

        return cmd_checkpoints(ctx) if ctx.args.command == "checkpoints" else cmd_rewind(ctx)
    if ctx.args.command == "export":
        from pi_core._cli.export import cmd_export

        return cmd_export(ctx)
    raise UsageError(f"unknown command {ctx.args.command!r}")  # pragma: no cover - argparse


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pi`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    Without ``argv`` (the console script) the process is set up for a command line first:
    stdout and stderr write UTF-8, stdin is replaced by ``/dev/null`` so no tool can wait on the
    terminal, and the process exits with the status.
    """
    if argv is not None:
        return run(list(argv))
    stdin = _prepare_process()
    status = EXIT_INTERRUPTED
    try:
        status = run(sys.argv[1:], stdin=stdin)
    except KeyboardInterrupt:
        pass  # after run's own Ctrl-C handling: the same status, and no traceback
    finally:
        # The command is over: a Ctrl-C from here on (closing stdin, flushing stdout, the
        # interpreter's exit) flushes what it can and ends the process at once with 130.
        if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
            signal.signal(signal.SIGINT, _exit_interrupted)
        if stdin is not None:
            stdin.close()
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    sys.exit(status)


def run(
    argv: Sequence[str],
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    stdin: IO[bytes] | None = None,
    third_party_autoload: bool | None = None,
) -> int:
    """Parse ``argv``, run the command, and map every failure to its exit status. ``stdin``:
    what ``pi call TOOL -`` reads (default: the process's standard input).
    ``third_party_autoload=False``: autoload only the plugins of pi's own distributions (other
    installed plugins load when named), as ``pi_core.testing.run_pi`` does; ``None``:
    ``PI_DISABLE_THIRD_PARTY_AUTOLOAD`` decides."""
    out = stdout if stdout is not None else sys.stdout
    # every message on stderr (errors, plugin failure reports, tracebacks) is sanitised
    err = cast(IO[str], SanitisedStream(stderr if stderr is not None else sys.stderr))
    with warnings.catch_warnings():
        # a command prints a config warning and goes on, whatever -W/PYTHONWARNINGS ask
        warnings.simplefilter("always", ConfigWarning)
        warnings.showwarning = _warning_printer(err)
        return _run(argv, out, err, stdin, third_party_autoload)


def _warning_printer(err: IO[str]) -> Callable[..., None]:
    """``warnings.showwarning`` for a command: a :class:`~pi_core.ConfigWarning` is one line
    ``pi: warning: MESSAGE`` on stderr; any other warning is printed the standard way."""
    standard = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, ConfigWarning):
            print(f"pi: warning: {' '.join(str(message).split())}", file=err)
        else:
            standard(message, category, *args, **kwargs)

    return show


def _run(
    argv: Sequence[str],
    out: IO[str],
    err: IO[str],
    stdin: IO[bytes] | None,
    third_party_autoload: bool | None,
) -> int:
    try:
        options, word = global_options(argv)
        ctx = CommandContext(
            args=options,
            stdout=out,
            stderr=err,
            stdin=stdin,
            third_party_autoload=third_party_autoload,
        )
        extra: dict[str, PluginCommand] = {}
        if word is None:
            # no command (bare ``pi``, ``pi --help``): list the plugins' commands too, if the
            # plugins load; otherwise the built-in ones (the error comes with a real command)
            try:
                extra = PluginHooks(ctx.plugin_manager).register_commands(BUILTIN_COMMANDS)
            except Exception:
                extra = {}
        elif word not in BUILTIN_COMMANDS:
            # not one of ours: a plugin may provide it (pi_register_commands); the config is
            # loaded after the full parse, from the command's --cwd
            extra = PluginHooks(ctx.unchecked_plugin_manager()).register_commands(BUILTIN_COMMANDS)
        args = build_parser(stdout=out, extra_commands=extra.values()).parse_args(list(argv))
        if args.command is None:
            names = [*BUILTIN_COMMANDS, *extra]
            listed = ", ".join(names[:-1]) + " or " + names[-1]
            raise UsageError(f"a command is required: {listed}")
        ctx.args = args
        if args.command in extra:
            invocation = CommandInvocation(
                args=args,
                config=ctx.config.data,
                config_path=str(ctx.config.path) if ctx.config.path else None,
                # what a plugin command prints may carry text from files, hooks or servers:
                # sanitised like every other output of pi (a fileno() stays the real one)
                stdout=cast(IO[str], SanitisedStream(out)),
                stderr=err,
                stdin=stdin,
            )
            return extra[args.command].run(invocation)
        return run_command(ctx)
    except ParserExit as e:
        return e.status
    except (Exception, KeyboardInterrupt, BaseExceptionGroup) as e:
        return _failure(e, err)


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups; ``[exc]`` for a plain one."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def _is_output_error(exc: BaseException) -> bool:
    """An error of writing pi's own output (a full disk, ``> /dev/full``): tool failures never
    reach here (they are tool results), so an ``OSError`` with one of these errnos is I/O."""
    return isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS


def _failure(exc: BaseException, err: IO[str]) -> int:
    """The exit status of a command that raised ``exc`` (trio may wrap it in a group)."""
    leaves = _leaves(exc)
    if any(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        _silence_stdout()  # the reader went away (``pi replay ... | head``): stop quietly
        return EXIT_BROKEN_PIPE
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return EXIT_INTERRUPTED
    io_errors = [leaf for leaf in leaves if isinstance(leaf, OSError) and _is_output_error(leaf)]
    if io_errors:
        # the output (stdout, a --session file) could not be written: not a bug of pi
        return _error(err, f"cannot write output: {io_errors[0].strerror}")
    if all(isinstance(leaf, PiError) for leaf in leaves):
        return _error(err, str(leaves[0]))
    # a bug in pi or in a plugin: say so, with the traceback
    print(f"pi: internal error: {type(leaves[0]).__name__}: {leaves[0]}", file=err)
    traceback.print_exception(exc, file=err)
    return EXIT_INTERNAL


def _error(err: IO[str], message: str) -> int:
    text = " ".join(message.split()) or "unknown error"
    print(f"pi: error: {text}", file=err)
    return EXIT_USAGE


def _exit_interrupted(signum: int, frame: object) -> None:
    exit_now()


def _prepare_process() -> IO[bytes] | None:
    """UTF-8 output whatever the locale; stdin from /dev/null (a replayed command must not
    read the terminal, spec'd by ``../cases``). Returns the original stdin (a duplicate, closed
    on exec so no child inherits it) for ``pi call TOOL -``, ``None`` if there was none."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8", errors="backslashreplace")
    # what plugins and warnings write to sys.stderr is sanitised too (pi's stderr is plain text)
    sys.stderr = SanitisedStream(sys.stderr)
    try:
        original: IO[bytes] | None = os.fdopen(os.dup(0), "rb")  # os.dup: not inheritable
    except OSError:
        original = None
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return original
    try:
        os.dup2(devnull, 0)
    except OSError:
        pass
    finally:
        os.close(devnull)
    return original


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush is
    quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


__all__ = ["main", "run"]
