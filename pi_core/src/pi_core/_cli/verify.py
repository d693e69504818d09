"""``pi replay SESSION --verify``: execute every recorded tool call of a Pi session again and
compare each result with the recorded one.

1. SESSION is read with :mod:`pi_core._wire.session_files` (v1 flat: every message; v2/v3 tree: the
   active branch). Each ``toolCall`` of an assistant message is paired with the recorded
   ``toolResult`` of the same ``toolCallId``; calls without a recorded result (turns that ended
   ``aborted`` or ``error``, never executed by Pi) are not run.
2. The recorded working directory (the session header's ``cwd``) is mapped to the workspace
   (``--cwd``, default ``.``); ``--map-cwd OLD=NEW`` (repeatable) gives the mapping instead.
   ``OLD`` is replaced by ``NEW`` at the start of the tool's declared path arguments
   (``path_arguments``) and anywhere in its declared ``command_argument`` (bash's ``command``).
3. ``--seed-from-reads``: before anything runs, each file that a recorded call shows in full
   (its tool's ``seed_file``; ``read``: no ``offset``/``limit``, not an error, no truncation)
   and that is missing in the workspace is created with the text of its first such call.
   Files outside the workspace are never created.
4. The calls run one at a time, in recorded order, through the whole pipeline
   (:func:`~pi_core._pipeline.pipeline.run_tool_call`: hooks included). A call whose declared
   written path (a ``path_arguments`` entry with ``write=True``: ``edit``,
   ``write``) resolves outside the workspace (``~/.pi/...``) is never run: it counts as a
   disagreement ``not run: NAME outside the workspace (PATH)``. ``--bash recorded`` answers the
   calls of tools with a ``command_argument`` (bash) from the recording instead (nothing runs;
   such calls are not verified, not printed and not counted).
5. Each result is compared with the recorded one by its tool's declared ``verify`` mode:

   * ``isError`` must be equal, for every tool;
   * ``"text"`` (``read``, ``ls``, ``find``, ``grep``, executed ``bash``): the text (text
     blocks joined by newlines; an image block counts as ``[image MIME]``) must be equal after
     the workspace path and the recorded cwd are both written ``<cwd>`` and temporary paths
     (``/tmp/...``, ``/var/folders/.../T/...``, the local temp dir) ``<tmp>``;
   * ``"outcome"`` (``edit``, ``write``): only the outcome (``isError``) counts -- recorded
     Pi versions worded their success messages differently (``why``: ``same outcome``);
   * ``"is_error"`` (the default, and any tool not registered): only ``isError``.

Output: each disagreement (``ID TOOL: WHY`` and a unified diff recorded -> replayed of the
normalised texts), then the agreement table (one row per tool in order of first appearance,
then ``all``). ``--json``: one line per verified call ``{"toolCallId", "toolName", "agree",
"why"}`` and a last line ``{"summary": {"<tool>": {"agree": N, "total": M}, ...}}``.
Exit status 0 whatever the agreement (130 when interrupted).
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import run_in_session
from pi_core._cli.output import write_json_line
from pi_core._cli.parser import UsageError
from pi_core._pipeline.config import AgentContext
from pi_core._tools.definition import AgentTool, VerifyMode
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
)
from pi_core._wire.session_files import SessionFile, SessionFileError, read_session_file

if TYPE_CHECKING:
    from pi_core._abort import Abort

DIFF_LINES = 60
"""At most this many lines of a disagreement's diff are printed."""

_TMP_PATH = re.compile(
    r"(?:/private)?/var/folders/[^\s/]+/[^\s/]+/T/[^\s\]\)'\",:‘’]*"
    r"|(?<![\w.])/tmp/[^\s\]\)'\",:‘’]*"
)


@dataclass
class RecordedCall:
    """A call and its recorded result: ``call`` (the ToolCall), ``message`` (the assistant
    message holding it), ``result`` (the recorded ToolResultMessage)."""

    call: ToolCall
    message: AssistantMessage
    result: Any


@dataclass
class Verdict:
    """The comparison of one call: ``agree``, ``why`` and the texts' ``diff`` lines."""

    call_id: str
    tool: str
    agree: bool
    why: str
    diff: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "toolCallId": self.call_id,
            "toolName": self.tool,
            "agree": self.agree,
            "why": self.why,
        }


def recorded_calls(session: SessionFile) -> list[RecordedCall]:
    """Every tool call with a recorded result, in order (see the module docstring, step 1)."""
    results = {
        m.tool_call_id: m for m in session.messages if getattr(m, "role", None) == "toolResult"
    }
    calls: list[RecordedCall] = []
    for message in session.assistant_messages:
        for call in message.tool_calls:
            result = results.get(call.id)
            if result is not None:
                calls.append(RecordedCall(call=call, message=message, result=result))
    return calls


def result_text(content: list[Any]) -> str:
    """Text blocks joined by newlines; an image block is ``[image MIME]``."""
    parts = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}]")
    return "\n".join(parts)


@dataclass
class CwdMap:
    """``--map-cwd`` pairs ``(old, new)``, both without a trailing slash."""

    pairs: list[tuple[str, str]]

    def path(self, value: str) -> str:
        """``value`` with a leading ``old`` replaced by ``new``."""
        for old, new in self.pairs:
            if value == old or value.startswith(old + "/"):
                return new + value[len(old) :]
        return value

    def text(self, value: str) -> str:
        """``value`` with every ``old`` replaced by ``new`` (bash commands)."""
        for old, new in self.pairs:
            value = value.replace(old, new)
        return value

    def arguments(self, tool: AgentTool | None, args: Any) -> Any:
        """The call's arguments with the recorded cwd mapped: in ``path`` and the tool's
        declared path arguments (at their start), in its declared command argument
        (anywhere)."""
        if not isinstance(args, dict):
            return args
        mapped = dict(args)
        names = {"path"} | {p.name for p in (tool.path_arguments if tool else ())}
        for name in names:
            if isinstance(mapped.get(name), str):
                mapped[name] = self.path(mapped[name])
        command = tool.command_argument if tool else None
        if command is not None and isinstance(mapped.get(command), str):
            mapped[command] = self.text(mapped[command])
        return mapped


def normalise(text: str, cwds: list[str]) -> str:
    """``text`` with each of ``cwds`` written ``<cwd>`` (longest first) and temporary paths
    written ``<tmp>``."""
    for cwd in sorted({c for c in cwds if c}, key=len, reverse=True):
        text = text.replace(cwd, "<cwd>")
    local_tmp = tempfile.gettempdir()
    if local_tmp not in ("/tmp", ""):
        text = re.sub(re.escape(local_tmp) + r"/[^\s\]\)'\",:‘’]*", "<tmp>", text)
    return _TMP_PATH.sub("<tmp>", text)


def compare(
    recorded: Any, replayed: Any, tool: str, cwds: list[str], mode: VerifyMode = "is_error"
) -> Verdict:
    """Compare two ToolResultMessages of ``tool`` by its verify ``mode`` (module docstring,
    step 5)."""
    call_id = recorded.tool_call_id
    if bool(recorded.is_error) != bool(replayed.is_error):
        diff = [
            *_excerpt("recorded", result_text(recorded.content), cwds),
            *_excerpt("replayed", result_text(replayed.content), cwds),
        ]
        why = (
            f"isError differs (recorded {str(bool(recorded.is_error)).lower()}, "
            f"replayed {str(bool(replayed.is_error)).lower()})"
        )
        return Verdict(call_id, tool, False, why, diff)
    if mode != "text":
        what = "same outcome" if mode == "outcome" else "same isError"
        return Verdict(call_id, tool, True, what)
    old = normalise(result_text(recorded.content), cwds)
    new = normalise(result_text(replayed.content), cwds)
    if old == new:
        return Verdict(call_id, tool, True, "same text")
    return Verdict(call_id, tool, False, "text differs", _diff_normalised(old, new))


EXCERPT_LINES = 5
"""Lines of each text shown when the outcomes differ."""


def _excerpt(label: str, text: str, cwds: list[str]) -> list[str]:
    lines = normalise(text, cwds).splitlines() or [""]
    shown = [f"{label}: {line}" for line in lines[:EXCERPT_LINES]]
    if len(lines) > EXCERPT_LINES:
        shown.append(f"{label}: ... ({len(lines) - EXCERPT_LINES} more lines)")
    return shown


def _diff_normalised(old: str, new: str) -> list[str]:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), "recorded", "replayed", lineterm="", n=2
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more diff lines)"]
    return lines


def seeded_file(item: RecordedCall, tool: AgentTool | None) -> tuple[str, str] | None:
    """``(path, text)`` of the file a recorded call shows in full, by its tool's ``seed_file``
    (module docstring, step 3), else ``None``."""
    if tool is None or tool.seed_file is None:
        return None
    result = item.result
    recorded = AgentToolResult(
        content=list(result.content),
        details=result.details,
        is_error=bool(result.is_error),
    )
    try:
        found = tool.seed_file(item.call.arguments, recorded)
    except Exception:  # a plugin's seed_file must not stop the verification
        return None
    if not (
        isinstance(found, tuple) and len(found) == 2 and all(isinstance(x, str) for x in found)
    ):
        return None
    return found


def seed_from_reads(
    calls: list[RecordedCall], cwd_map: CwdMap, cwd: str, tools: Mapping[str, AgentTool]
) -> list[str]:
    """Create the missing files that recorded calls show in full inside ``cwd``; returns the
    created paths (absolute), in order."""
    created: list[str] = []
    seen: set[str] = set()
    root = os.path.realpath(cwd)
    for item in calls:
        found = seeded_file(item, tools.get(item.call.name))
        if found is None:
            continue
        named, text = found
        raw = cwd_map.path(named)
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(raw.removeprefix("@"))))
        if path in seen:
            continue
        seen.add(path)
        real = os.path.realpath(path)
        if real != root and not real.startswith(root + os.sep):
            continue
        if os.path.lexists(path):
            continue
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        except OSError:
            continue
        created.append(path)
    return created


def parse_map_cwd(values: list[str], recorded_cwd: str | None, cwd: str) -> CwdMap:
    """``--map-cwd OLD=NEW`` values (default: the header's cwd to ``cwd``)."""
    pairs: list[tuple[str, str]] = []
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--map-cwd must be OLD=NEW (got {value!r})")
        pairs.append((old.rstrip("/") or "/", os.path.abspath(new).rstrip("/") or "/"))
    if not pairs and recorded_cwd:
        pairs.append((recorded_cwd.rstrip("/") or "/", cwd))
    return CwdMap(pairs)


def summarise(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """``{tool: {"agree": N, "total": M}}`` in order of first appearance."""
    summary: dict[str, dict[str, int]] = {}
    for verdict in verdicts:
        row = summary.setdefault(verdict.tool, {"agree": 0, "total": 0})
        row["total"] += 1
        row["agree"] += int(verdict.agree)
    return summary


def cmd_verify(ctx: CommandContext) -> int:
    """``pi replay SESSION --verify [--cwd DIR] [--json] [--seed-from-reads]
    [--bash run|recorded] [--map-cwd OLD=NEW]...``."""
    from pi_core._pipeline.pipeline import run_tool_call

    args = ctx.args
    try:
        session_file = read_session_file(args.file)
    except SessionFileError as e:
        raise UsageError(str(e)) from None
    cwd = ctx.cwd()
    recorded_cwd = (session_file.header or {}).get("cwd")
    cwd_map = parse_map_cwd(
        args.map_cwd, recorded_cwd if isinstance(recorded_cwd, str) else None, cwd
    )
    cwds = [cwd, *(old for old, _ in cwd_map.pairs), *(new for _, new in cwd_map.pairs)]
    calls = recorded_calls(session_file)
    session = ctx.session(cwd, "replay")
    tools = list(session.tools)
    by_name = {t.name: t for t in tools}
    if args.seed_from_reads:
        seed_from_reads(calls, cwd_map, cwd, by_name)
    config = ctx.loop_config(session)
    verdicts: list[Verdict] = []

    async def verify(abort: Abort) -> None:
        for item in calls:
            if abort.aborted:
                break
            tool = by_name.get(item.call.name)
            if tool is not None and tool.command_argument is not None and args.bash == "recorded":
                continue
            call = item.call.model_copy(
                update={"arguments": cwd_map.arguments(tool, item.call.arguments)}
            )
            outside = _outside_target(call, tool, cwd)
            if outside is not None:
                why = f"not run: {call.name} outside the workspace ({outside})"
                verdict = Verdict(item.call.id, item.call.name, False, why)
                verdicts.append(verdict)
                if args.json:
                    write_json_line(ctx.stdout, verdict.to_json_dict())
                else:
                    _print_disagreement(ctx, verdict)
                continue
            message = AssistantMessage(content=[call], stop_reason="toolUse")
            context = AgentContext(messages=[message], tools=tools)
            outcome = await run_tool_call(
                call, context, config, assistant_message=message, abort=abort
            )
            mode = tool.verify if tool is not None else "is_error"
            verdict = compare(item.result, outcome.to_message(), item.call.name, cwds, mode)
            verdicts.append(verdict)
            if args.json:
                write_json_line(ctx.stdout, verdict.to_json_dict())
            elif not verdict.agree:
                _print_disagreement(ctx, verdict)

    interrupted = run_in_session(session, verify)
    summary = summarise(verdicts)
    if args.json:
        write_json_line(ctx.stdout, {"summary": summary})
    else:
        _print_table(ctx, summary)
    if not verdicts and not interrupted:
        why = (
            "its calls with a recorded result are all commands, answered from the recording "
            "(--bash recorded)"
            if calls
            else "the session has no tool call with a recorded result"
        )
        ctx.stderr.write(f"pi: note: nothing was verified: {why}\n")
        ctx.stderr.flush()
    return 130 if interrupted else 0


def _outside_target(call: ToolCall, tool: AgentTool | None, cwd: str) -> str | None:
    """The first declared written path of ``call`` (``path_arguments`` that ``tool`` writes)
    that resolves outside ``cwd``, else ``None``."""
    args = call.arguments
    if tool is None or not isinstance(args, dict):
        return None
    root = os.path.realpath(cwd)
    for declared in tool.path_arguments:
        raw = args.get(declared.name, declared.default)
        if not declared.write or not isinstance(raw, str):
            continue
        path = os.path.realpath(os.path.join(cwd, os.path.expanduser(raw.removeprefix("@"))))
        if path != root and not path.startswith(root + os.sep):
            return raw
    return None


def _print_disagreement(ctx: CommandContext, verdict: Verdict) -> None:
    out = ctx.renderer.out  # sanitised: the diff shows recorded and replayed tool output
    out.write(f"{verdict.call_id} {verdict.tool}: {verdict.why}\n")
    for line in verdict.diff:
        out.write(f"  {line}\n")
    out.write("\n")
    out.flush()


def _print_table(ctx: CommandContext, summary: dict[str, dict[str, int]]) -> None:
    """``tool  agree  total`` rows, then ``all``."""
    rows = [(tool, row["agree"], row["total"]) for tool, row in summary.items()]
    rows.append(
        (
            "all",
            sum(r["agree"] for r in summary.values()),
            sum(r["total"] for r in summary.values()),
        )
    )
    width = max(len("tool"), *(len(r[0]) for r in rows))
    out = ctx.renderer.out
    out.write(f"{'tool'.ljust(width)}  agree  total\n")
    for tool, agree, total in rows:
        out.write(f"{tool.ljust(width)}  {agree:>5}  {total:>5}\n")
    out.flush()


__all__ = [
    "CwdMap",
    "RecordedCall",
    "Verdict",
    "cmd_verify",
    "compare",
    "normalise",
    "parse_map_cwd",
    "recorded_calls",
    "seed_from_reads",
    "seeded_file",
    "summarise",
]
