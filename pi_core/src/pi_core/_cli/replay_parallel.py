"""``pi replay --parallel N FILE...``: replay several recorded sessions at once, each in its own
pi session (its own tools, hooks and backend objects: with the sandbox plugin's Ray backend, its
own actor on the cluster), at most N at a time.

Each FILE is replayed exactly as ``pi replay FILE`` would (:func:`~pi_core._cli.replay.
prepare_replay`, the same flags: ``--cwd``, ``--sequential``, ``--exposure``...), so its tool
results are the ones a sequential replay gives; sessions only overlap in time. Every FILE is
read before anything runs (an unreadable one is a usage error).

Output:

* ``--json``: one JSON line per FILE, in the order given (each printed as soon as it and every
  FILE before it finished): ``{"file": FILE, "status": "ok" | "failed: REASON" |
  "interrupted", "calls": N, "errors": N, "seconds": S, "results": [ToolResultMessage...]}``;
* otherwise a progress bar on stderr while it runs (rich, only when stderr is a terminal), then
  a summary table on stdout (one row per FILE: tool calls, error results, seconds, status) and a
  total line: ``N sessions, M tool calls in S s (R calls/s), N at a time``.

Exit status 0 when every session ran (whatever its tool results), 1 when a session failed to
set up or run (its row says why), 130 after Ctrl-C (the first aborts every running session; the
sessions not started are reported as ``interrupted``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import run_interruptible
from pi_core._cli.output import write_json_line
from pi_core._cli.replay import prepare_replay
from pi_core._errors import PiError

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._plugins.facade import PluginHooks


@dataclass
class SessionReport:
    """What one replayed FILE gave: its ``results`` (ToolResultMessages as JSON dicts), the
    number of ``calls`` and ``errors`` (results with ``isError``), ``seconds`` and ``status``."""

    file: str
    results: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0
    status: str = "interrupted"
    done: bool = False

    def to_json_dict(self) -> dict[str, Any]:
        """The ``--json`` line of this FILE."""
        return {
            "file": self.file,
            "status": self.status,
            "calls": self.calls,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "results": self.results,
        }


class _Collector:
    """The event sink of one session: keeps its ToolResultMessages, then notifies
    ``pi_on_event``."""

    def __init__(self, report: SessionReport) -> None:
        self.report = report
        self.hooks: PluginHooks | None = None

    def bind(self, hooks: PluginHooks) -> Any:
        self.hooks = hooks
        return self.emit

    async def emit(self, event: Any) -> None:
        if event.type == "message_end" and getattr(event.message, "role", None) == "toolResult":
            self.report.results.append(event.message.to_json_dict())
            self.report.calls += 1
            self.report.errors += bool(event.message.is_error)
        if self.hooks is not None:
            await self.hooks.on_event(event)


class _Progress:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, ctx: CommandContext, total: int) -> None:
        self.bar: Any = None
        self.task: Any = None
        isatty = getattr(ctx.stderr, "isatty", None)
        if isatty is not None and isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn("replay"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[calls]} tool calls"),
                console=Console(file=ctx.stderr),
                transient=True,
            )
            self.task = self.bar.add_task("replay", total=total, calls=0)
            self.bar.start()

    def advance(self, calls: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, calls=calls)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def cmd_replay_parallel(ctx: CommandContext) -> int:
    """``pi replay --parallel N FILE... [--cwd DIR] [--json] [--sequential] ...`` (see the
    module docstring)."""
    from pi_core._cli.parser import UsageError
    from pi_core._wire.session_files import SessionFileError, read_session_file

    files = [ctx.args.file, *ctx.args.more_files]
    for file in files:
        try:
            read_session_file(file)
        except SessionFileError as e:
            raise UsageError(str(e)) from None
    ctx.cwd()  # a missing --cwd is a usage error before anything runs
    limit = ctx.args.parallel or 1
    reports = [SessionReport(file) for file in files]
    progress = _Progress(ctx, len(files))
    printed = 0
    started = time.monotonic()

    def print_finished() -> None:
        nonlocal printed
        while printed < len(reports) and reports[printed].done:
            if ctx.args.json:
                write_json_line(ctx.stdout, reports[printed].to_json_dict())
            printed += 1

    async def replay_one(report: SessionReport, limiter: trio.CapacityLimiter, abort: Abort):
        async with limiter:
            if abort.aborted:
                report.done = True
                print_finished()
                return
            begin = time.monotonic()
            try:
                collector = _Collector(report)
                session, replay = prepare_replay(ctx, report.file, collector.bind)
                async with session:
                    try:
                        await replay(abort)
                    finally:
                        if abort.aborted:
                            session.outcome = "interrupted"
                report.status = "interrupted" if abort.aborted else "ok"
            except PiError as e:
                report.status = f"failed: {e}"
            report.seconds = time.monotonic() - begin
            report.done = True
            progress.advance(sum(r.calls for r in reports))
            print_finished()

    async def main(abort: Abort) -> None:
        limiter = trio.CapacityLimiter(limit)
        async with trio.open_nursery() as nursery:
            for report in reports:
                nursery.start_soon(replay_one, report, limiter, abort)

    try:
        interrupted = run_interruptible(main)
    finally:
        progress.stop()
    for report in reports:
        report.done = True
    print_finished()
    if not ctx.args.json:
        write_summary(ctx, reports, time.monotonic() - started, limit)
    if interrupted:
        return 130
    return 1 if any(r.status.startswith("failed") for r in reports) else 0


def write_summary(
    ctx: CommandContext, reports: list[SessionReport], seconds: float, limit: int
) -> None:
    """The summary table and the total line on stdout (rich on a terminal, plain text
    otherwise)."""
    calls = sum(r.calls for r in reports)
    rate = calls / seconds if seconds > 0 else 0.0
    total = (
        f"{len(reports)} sessions, {calls} tool calls in {seconds:.1f} s "
        f"({rate:.1f} calls/s), {limit} at a time"
    )
    rows = [(r.file, str(r.calls), str(r.errors), f"{r.seconds:.2f}", r.status) for r in reports]
    header = ("FILE", "CALLS", "ERRORS", "SECONDS", "STATUS")
    isatty = getattr(ctx.stdout, "isatty", None)
    if isatty is not None and isatty():
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(*header, title="pi replay --parallel")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console = Console(file=ctx.stdout)
        console.print(table)
        console.print(escape(total))
        return
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 4)]
        ctx.stdout.write("  ".join([*cells, row[4]]).rstrip() + "\n")
    ctx.stdout.write(total + "\n")
    ctx.stdout.flush()


__all__ = ["SessionReport", "cmd_replay_parallel", "write_summary"]
