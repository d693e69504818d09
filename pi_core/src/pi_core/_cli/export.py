"""``pi export SESSION [-o FILE.html] [--audit AUDIT.jsonl]``, and ``--report FILE`` of
``pi run`` and ``pi replay``: the HTML session report
(:mod:`pi_core._report`).

``pi export`` prints one line, ``wrote FILE.html (N calls, SIZE)``. A session or audit file it
cannot read, or an output it cannot write, is a usage error (one line on stderr, exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pi_core._cli.context import CommandContext
from pi_core._cli.parser import UsageError


def _size(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def write_report_file(report: dict[str, Any], path: str, option: str) -> int:
    """Write ``report``'s page to ``path``; its size in bytes. A path pi cannot write is a
    :class:`UsageError` ``OPTION PATH: cannot write: REASON``."""
    from pi_core._report.html import render_html

    data = render_html(report).encode("utf-8")
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write: {e.strerror or e}") from None
    return len(data)


def same_file(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (or, when one does not exist yet, lead to
    the same place)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they lead
        return os.path.realpath(a) == os.path.realpath(b)


def audit_file(audit: str | None, cwd: str | os.PathLike[str] | None) -> str | None:
    """Where ``--audit FILE`` is written: relative to the session's ``cwd``, ``~`` expanded, as
    the audit log opens it (``None`` without ``--audit`` or when the folder is not known yet)."""
    if audit is None or cwd is None:
        return None
    return os.path.join(cwd, os.path.expanduser(audit))


def check_report_path(
    path: str, option: str = "--report", inputs: Iterable[tuple[str, str | None]] = ()
) -> None:
    """Refuse, before a run starts, a report path whose folder does not exist or that is a
    folder (the report is written at the end; a run should not be lost to a typo), or that is
    one of the command's own files, ``inputs`` (``(what, path)``: the session it reads or
    writes, the audit log), which the page would replace."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path}: cannot write: Is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"{option} {path}: cannot write: No such file or directory")
    for what, other in inputs:
        if other is not None and other != "-" and same_file(path, other):
            raise UsageError(f"{option} {path}: is {what}, which the page would replace")


def cmd_export(ctx: CommandContext) -> int:
    """``pi export``: see the module docstring."""
    from pi_core._report.model import SessionFileError, report_from_files

    args = ctx.args
    output = args.output
    if output is None:
        output = Path(args.file).with_suffix(".html").name
    check_report_path(output, "-o", [("the session file", args.file), ("--audit", args.audit)])
    try:
        report = report_from_files(args.file, args.audit)
    except SessionFileError as e:
        raise UsageError(str(e)) from None
    size = write_report_file(report, output, "-o")
    calls = report["summary"]["calls"]
    ctx.stdout.write(f"wrote {output} ({calls} call{'' if calls == 1 else 's'}, {_size(size)})\n")
    return 0


__all__ = ["audit_file", "check_report_path", "cmd_export", "same_file", "write_report_file"]
