"""``pi checkpoints`` and ``pi rewind``: what the sessions of a workspace changed, and the way
back (``docs/how-to/undo.md``).

::

    pi checkpoints [SESSION] [--cwd DIR] [--json]
    pi checkpoints --sessions [--cwd DIR] [--json]
    pi checkpoints prune [--all] [--max-bytes N] [--cwd DIR] [--json]
    pi rewind [SESSION] (--to CALL_ID | --turn N | --undo) [--dry-run] [--files PATH...]
              [--force] [--cwd DIR] [--json]

SESSION is a session id or a unique prefix of it (at least 4 characters); default: the latest
session of the workspace (for ``--undo``: the session of the latest rewind). The workspace is
the first of ``--cwd`` (default: the working directory) and its parents with recorded
checkpoints.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import trio

from pi_core._checkpoints.api import (
    checkpoint_sessions,
    list_checkpoints,
    prune_checkpoints,
    rewind,
)
from pi_core._checkpoints.history import (
    Checkpoint,
    CheckpointError,
    CheckpointSession,
    RewindContext,
    RewindRefused,
    RewindResult,
)
from pi_core._cli.context import CommandContext
from pi_core._cli.output import write_json
from pi_core._cli.parser import UsageError
from pi_core._cli.terminal import sanitise

PRUNE = "prune"
"""``pi checkpoints prune``: the word that takes the place of SESSION."""


def human_bytes(size: int) -> str:
    """``0 B``, ``512 B``, ``1.5 kB``, ``2.0 MB``, ``3.1 GB`` (powers of 1,000)."""
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000 or unit == "TB":
            return f"{value:.1f} {unit}"
    return f"{size} B"  # pragma: no cover


def _time(seconds: float | None) -> str:
    if not seconds:
        return "-"
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def _write(ctx: CommandContext, lines: list[str]) -> None:
    ctx.stdout.write(sanitise("".join(line + "\n" for line in lines)))


def session_title(info: CheckpointSession) -> str:
    """``session ID (pi HOST, started TIME[, running])``."""
    running = ", running" if info.running else ""
    host = f"pi {info.host}" if info.host in ("run", "call", "replay", "mcp") else info.host
    return f"session {info.id} ({host}, started {_time(info.started)}{running})"


def checkpoint_lines(info: CheckpointSession, checkpoints: list[Checkpoint]) -> list[str]:
    """The text of ``pi checkpoints``: the session, then one row per checkpoint (turn, call
    id indented under its parent, tool, changes, bytes)."""
    lines = [session_title(info)]
    if not checkpoints:
        return [*lines, "no checkpoints"]
    depth: dict[str, int] = {}
    rows = [["turn", "call", "tool", "bytes", "changes"]]
    for cp in checkpoints:
        level = depth.get(cp.parent_call_id, -1) + 1 if cp.parent_call_id is not None else 0
        depth[cp.call_id] = level
        changes = " ".join(change.label() for change in cp.changes) or "(no change)"
        if cp.state not in ("done",):
            changes += f" [{cp.state}]"
        rows.append(
            [str(cp.turn), "  " * level + cp.call_id, cp.tool, human_bytes(cp.bytes), changes]
        )
    return [*lines, *_table(rows)]


def cmd_checkpoints(ctx: CommandContext) -> int:
    """``pi checkpoints``: see the module. ``--json``: ``{"session": {...}, "checkpoints":
    [...]}`` (``--sessions``: a list of sessions; ``prune``: ``{"removed": [...], "bytes": N}``)."""
    args = ctx.args
    cwd = ctx.cwd()
    config = ctx.config.data
    if args.session == PRUNE:
        if args.sessions:
            raise UsageError("--sessions and prune cannot be combined")
        removed, left = prune_checkpoints(
            cwd, config=config, everything=args.all, max_bytes=args.max_bytes
        )
        if args.json:
            write_json(ctx.stdout, {"removed": removed, "bytes": left})
        else:
            _write(ctx, [f"removed {len(removed)} session(s); {human_bytes(left)} kept"])
        return 0
    if args.all or args.max_bytes is not None:
        raise UsageError("--all and --max-bytes go with pi checkpoints prune")
    if args.sessions:
        if args.session is not None:
            raise UsageError("--sessions lists every session: give no SESSION")
        sessions = checkpoint_sessions(cwd, config=config)
        if args.json:
            write_json(ctx.stdout, [s.to_json_dict() for s in sessions])
            return 0
        rows = [["session", "host", "started", "calls", "bytes"]]
        for s in sessions:
            state = " (running)" if s.running else ""
            rows.append(
                [s.id, s.host, _time(s.started), str(s.calls), human_bytes(s.bytes) + state]
            )
        _write(ctx, _table(rows))
        return 0
    info, checkpoints = list_checkpoints(cwd, session=args.session, config=config)
    if args.json:
        write_json(
            ctx.stdout,
            {
                "session": info.to_json_dict(),
                "checkpoints": [c.to_json_dict() for c in checkpoints],
            },
        )
    else:
        _write(ctx, checkpoint_lines(info, checkpoints))
    return 0


def rewind_lines(result: RewindResult) -> list[str]:
    """The text of ``pi rewind``: what changed (or would), then the paths left alone."""
    verb = "would rewind" if result.dry_run else "rewound"
    count = len(result.changes)
    lines = [
        f"{verb} session {result.session_id[:12]} to {result.target}: "
        f"{count} path{'' if count == 1 else 's'}"
    ]
    lines += [f"  {change.label()}" for change in result.changes]
    if result.conflicts:
        lines.append(
            "conflicts (changed outside pi since the checkpoint; left alone, --force overwrites):"
        )
        lines += [f"  ! {c.path}: {c.reason}" for c in result.conflicts]
    if result.unrestorable:
        lines.append("not restored:")
        lines += [f"  ! {c.path}: {c.reason}" for c in result.unrestorable]
    if result.rewind_id is not None:
        lines.append(f"recorded as {result.rewind_id}: pi rewind --undo takes it back")
    return lines


def cmd_rewind(ctx: CommandContext) -> int:
    """``pi rewind``: see the module. Exit status 0 when every path was (or would be) put back,
    1 when some were left alone (conflicts, contents not stored) or a plugin refused."""
    args = ctx.args
    cwd = ctx.cwd()
    given = [args.to is not None, args.turn is not None, args.undo]
    if sum(given) != 1:
        raise UsageError("pi rewind needs exactly one of --to CALL_ID, --turn N and --undo")
    if args.turn is not None and args.turn < 1:
        raise UsageError(f"--turn {args.turn}: turns are numbered from 1")
    hooks: Any = None
    if not args.dry_run:
        from pi_core._plugins.facade import PluginHooks

        hooks = PluginHooks(ctx.plugin_manager, ctx.config.data)

    async def before(context: RewindContext) -> RewindRefused | None:
        return await hooks.before_rewind(context) if hooks is not None else None

    # --files names paths as the shell does: relative to the working directory
    files = [os.path.abspath(os.path.expanduser(f)) for f in args.files or ()]

    async def main() -> RewindResult:
        return await rewind(
            cwd,
            session=args.session,
            to=args.to,
            turn=args.turn,
            undo=args.undo,
            files=files,
            dry_run=args.dry_run,
            force=args.force,
            config=ctx.config.data,
            before_rewind=before,
        )

    try:
        result = trio.run(main)
    except RewindRefused as refused:
        source = f"plugin {refused.source}" if refused.source else "a plugin"
        ctx.stderr.write(sanitise(f"pi rewind: refused by {source}: {refused}\n"))
        return 1
    if args.json:
        write_json(ctx.stdout, result.to_json_dict())
    else:
        _write(ctx, rewind_lines(result))
    return 0 if result.complete else 1


__all__ = [
    "CheckpointError",
    "checkpoint_lines",
    "cmd_checkpoints",
    "cmd_rewind",
    "human_bytes",
    "rewind_lines",
]
