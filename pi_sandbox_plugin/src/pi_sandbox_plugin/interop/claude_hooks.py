"""Claude Code hooks run unchanged: ``PreToolUse``/``PostToolUse`` command hooks on pi tool calls.

The protocol is the one of ``/work/shared/spec/policy-formats.md`` §1. This module is the engine
(configuration, tool mapping, running, combining); wiring it into pi's hooks is the plugin's job.

API
---

* :class:`ClaudeHookSet` (``ClaudeHookSet.from_settings(settings_paths, inline, *, cwd,
  source_name="pi.toml")``): the ``hooks`` section of Claude Code settings files and the same
  structure written inline. Only ``PreToolUse`` and ``PostToolUse`` are kept; other events are
  listed in :attr:`ClaudeHookSet.notes`. Only ``type = "command"`` handlers are accepted: an
  ``http``/``prompt``/``agent`` handler, or one with an ``if`` condition, is a
  :class:`~pi_core.ConfigError` (pi would otherwise skip a hook the user relies on). Errors are
  one line: ``FILE: hooks.PreToolUse[0].hooks[1].timeout: must be a positive number of seconds``.
  The default timeout is 600 s. ``async`` and ``once`` are accepted, but pi runs every hook
  synchronously on every call (a stricter reading).
* Tool mapping: :data:`CLAUDE_TOOL_NAMES`, :func:`to_claude`, :func:`from_claude`
  (:class:`ClaudeInputError`).
* Running: :func:`run_pre_tool_use` → :class:`PreToolUseOutcome`, :func:`run_post_tool_use` →
  :class:`PostToolUseOutcome`; each hook run is a :class:`HookRun`.

Matchers
--------

As Claude Code (hooks reference): ``""``, ``"*"`` or no matcher matches every tool; a matcher made
only of letters, digits, ``_``, ``-``, spaces, ``,`` and ``|`` is a list of exact, case-sensitive
names separated by ``|`` or ``,`` (``Edit`` does not match ``MultiEdit``); anything else is an
unanchored regular expression (``re.search``: ``^Notebook`` matches ``NotebookEdit``,
``mcp__memory__.*`` every tool of that server). The matcher is compared with the *mapped* name (``Bash``, ``Read``...). One pi addition:
current Claude Code has no ``MultiEdit`` tool, so public matchers say ``Edit|Write``; a pi edit
with several replacements (sent as ``MultiEdit``) therefore also runs the hooks whose matcher
matches ``Edit``, so it never slips past a hook that guards edits.

Running
-------

Every matching hook (identical command strings once, the first one's timeout, as Claude Code
de-duplicates them) runs concurrently as ``/bin/sh -c COMMAND`` on the host, in its own session,
with the session cwd as working directory and ``os.environ`` plus ``CLAUDE_PROJECT_DIR=cwd``. The
call's JSON is written to its stdin. stdout and stderr are each capped at 1 MiB (more is an error).
At its timeout its whole process group is killed; after it exits, its pipes are read for at most
1 s more, then the group is killed if a background process of it still holds them.

* exit 0: stdout is parsed as a JSON object when it starts with ``{`` (other text is ignored);
* exit 2: the call is blocked, stderr (stripped) is the reason;
* any other exit, a timeout, a start failure, over-long output, invalid JSON or a JSON field of the
  wrong type is an error: ``on_error="deny"`` (pi's default) blocks with a reason that names the
  command and includes its stderr, ``"continue"`` ignores the hook (Claude Code's behaviour).

PreToolUse JSON: ``hookSpecificOutput.permissionDecision`` (``allow|deny|ask|defer``, combined
across hooks deny > defer > ask > allow), ``permissionDecisionReason``, ``updatedInput`` (merged
over the mapped call, then mapped back to pi's arguments; two hooks with different inputs deny the
call, naming both), ``additionalContext`` (all of them, in hook order); the legacy top-level
``decision: "block"|"approve"`` with ``reason`` (used when no ``permissionDecision`` is given);
``continue: false`` denies with its ``stopReason`` (pi does not stop the whole agent). Reasons are
joined with a newline when several hooks give the winning decision. ``updatedInput`` of a hook
that denies is ignored; the others apply whatever the decision (``None`` included), unless the
call is denied. ``suppressOutput`` and ``systemMessage`` are ignored. ``transcript_path`` is
``null`` when pi has no transcript file.

PostToolUse sends ``tool_response``: for ``Bash`` ``{stdout: TEXT, stderr: "", interrupted: false,
isImage: false}`` (pi merges the two streams); for every other tool ``{output: TEXT, success:
not is_error}`` plus ``filePath`` (absolute) for ``Read``/``Write``/``Edit``/``MultiEdit``. It reads
exit 2 (stderr blocks), ``decision: "block"`` + ``reason``, ``continue: false`` + ``stopReason``,
``hookSpecificOutput.additionalContext`` and ``hookSpecificOutput.updatedToolOutput``: a string, or
an object with the keys of the ``tool_response`` sent (its ``stdout`` or ``output`` string is the
new text; for Bash a non-empty ``stderr`` is appended on a new line). Another shape, or two hooks
with different outputs, is rejected and the original kept (:attr:`PostToolUseOutcome.output_rejected`).

Nothing here is sanitised (the renderer does it), but every text that reaches a reason is capped
at :data:`REASON_LIMIT` characters.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import trio

from pi_core import ConfigError, parse_json
from pi_core.backends import resolve_to_cwd

Decision = Literal["allow", "deny", "ask", "defer"]
OnError = Literal["deny", "continue"]

DEFAULT_TIMEOUT = 600.0
"""Seconds a command hook may run when its ``timeout`` is not given (current Claude Code)."""
OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout, and of stderr, a hook may print; more is an error."""
REASON_LIMIT = 8000
"""Characters of a hook's text (stderr, a reason) that reach the model or the audit log."""
DRAIN_SECONDS = 1.0
"""After a hook exits, how long its pipes are still read (a background child may hold them)."""
SHELL = "/bin/sh"

SUPPORTED_EVENTS = ("PreToolUse", "PostToolUse")
"""The hook events pi runs; other events of a settings file are noted and ignored."""

CLAUDE_TOOL_NAMES: dict[str, str] = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "grep": "Grep",
    "find": "Glob",
    "ls": "LS",
}
"""pi tool name → Claude Code tool name. ``edit`` with several replacements is ``MultiEdit``.
Other tools keep their names and arguments."""

FIELD_MAP: dict[str, dict[str, str]] = {
    "bash": {"command": "command", "timeout": "timeout"},
    "read": {"path": "file_path", "offset": "offset", "limit": "limit"},
    "write": {"path": "file_path", "content": "content"},
    "grep": {
        "pattern": "pattern",
        "path": "path",
        "glob": "glob",
        "ignoreCase": "-i",
        "context": "-C",
        "limit": "head_limit",
        "literal": "literal",
    },
    "find": {"pattern": "pattern", "path": "path", "limit": "limit"},
    "ls": {"path": "path", "limit": "limit"},
}
"""pi argument → Claude Code ``tool_input`` field, per mapped tool (``edit`` is built apart).
pi-only arguments (``grep.literal``, ``find.limit``, ``ls.limit``) keep their pi names; an argument
not listed here is passed through under its own name. Paths become absolute (resolved against the
session cwd); ``bash.timeout`` is seconds in pi and milliseconds in Claude Code."""

_PATH_FIELDS = {"file_path", "path"}
_MULTI_EDIT = "MultiEdit"
_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_\- ,|]*")


# ================================================================================================
# Configuration
# ================================================================================================


@dataclass(frozen=True)
class ClaudeHookCommand:
    """One ``{"type": "command", ...}`` handler.

    ``command``: the shell command as written; ``timeout``: seconds; ``source``: the settings
    file as configured, or ``"pi.toml"``; ``where``: its place there
    (``hooks.PreToolUse[0].hooks[1]``); ``matcher``: its group's matcher (``""`` for all)."""

    command: str
    timeout: float
    source: str
    where: str
    matcher: str


@dataclass(frozen=True)
class ClaudeHookMatcher:
    """One matcher group of an event: a matcher and its command handlers."""

    matcher: str
    hooks: tuple[ClaudeHookCommand, ...]
    pattern: re.Pattern[str] | None = None
    """The regular expression when the matcher is one (see the module docstring)."""

    def matches(self, claude_tool_name: str) -> bool:
        """Whether this group runs for ``claude_tool_name`` (Claude Code's matcher rules, plus
        ``MultiEdit`` matching what ``Edit`` matches)."""
        names = [claude_tool_name]
        if claude_tool_name == _MULTI_EDIT:
            names.append("Edit")
        return any(self._matches(name) for name in names)

    def _matches(self, name: str) -> bool:
        if self.matcher.strip() in ("", "*"):
            return True
        if self.pattern is not None:
            return self.pattern.search(name) is not None
        return name in (part.strip() for part in re.split(r"[|,]", self.matcher))


@dataclass(frozen=True)
class ClaudeHookSet:
    """The configured ``PreToolUse`` and ``PostToolUse`` hooks, in configuration order (settings
    files in the order given, then the inline ones). ``notes``: what was read but is not run
    (other events), one line each, for ``pi policy check``."""

    pre_tool_use: tuple[ClaudeHookMatcher, ...] = ()
    post_tool_use: tuple[ClaudeHookMatcher, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when no PreToolUse or PostToolUse hook is configured."""
        return not (self.pre_tool_use or self.post_tool_use)

    def matching(
        self, event: Literal["PreToolUse", "PostToolUse"], claude_tool_name: str
    ) -> list[ClaudeHookCommand]:
        """The commands that run for ``claude_tool_name`` at ``event``, in configuration order,
        each command string once (the first occurrence is kept)."""
        groups = self.pre_tool_use if event == "PreToolUse" else self.post_tool_use
        seen: set[str] = set()
        found: list[ClaudeHookCommand] = []
        for group in groups:
            if not group.matches(claude_tool_name):
                continue
            for hook in group.hooks:
                if hook.command not in seen:
                    seen.add(hook.command)
                    found.append(hook)
        return found

    @classmethod
    def from_settings(
        cls,
        settings_paths: Sequence[str],
        inline: Mapping[str, Any] | None,
        *,
        cwd: str,
        source_name: str = "pi.toml",
        inline_prefix: str = "sandbox.claude_hooks",
    ) -> ClaudeHookSet:
        """Read the ``hooks`` section of each settings file (paths relative to ``cwd``, ``~``
        expanded; a file without ``hooks`` adds nothing), then ``inline``: a mapping of event
        name to matcher groups, the same structure (errors name ``source_name`` and
        ``inline_prefix.EVENT[i]...``). Raises :class:`~pi_core.ConfigError` with one line
        ``FILE: hooks.PreToolUse[0].hooks[1].timeout: PROBLEM`` for a missing or unreadable file,
        invalid JSON, a value of the wrong type, an invalid regular expression or a handler pi
        cannot run."""
        pre: list[ClaudeHookMatcher] = []
        post: list[ClaudeHookMatcher] = []
        notes: list[str] = []
        for name in settings_paths:
            path = os.path.join(cwd, os.path.expanduser(name))
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                raise ConfigError(
                    f"{name}: cannot read the Claude Code settings file: {exc.strerror or exc}"
                ) from None
            except UnicodeDecodeError:
                raise ConfigError(f"{name}: the settings file is not UTF-8 text") from None
            try:
                data = parse_json(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{name}: invalid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{name}: must be a JSON object")
            if "hooks" in data:
                _read_events(data["hooks"], name, "hooks", pre, post, notes)
        if inline:
            _read_events(inline, source_name, inline_prefix, pre, post, notes)
        return cls(tuple(pre), tuple(post), tuple(notes))


def _read_events(
    events: Any,
    source: str,
    prefix: str,
    pre: list[ClaudeHookMatcher],
    post: list[ClaudeHookMatcher],
    notes: list[str],
) -> None:
    if not isinstance(events, Mapping):
        raise ConfigError(f"{source}: {prefix}: must be an object of hook events")
    for event, groups in events.items():
        where = f"{prefix}.{event}"
        if event not in SUPPORTED_EVENTS:
            notes.append(
                f"{source}: {where}: ignored (pi runs only PreToolUse and PostToolUse hooks)"
            )
            continue
        if not isinstance(groups, Sequence) or isinstance(groups, str):
            raise ConfigError(f"{source}: {where}: must be a list of matcher groups")
        target = pre if event == "PreToolUse" else post
        for i, group in enumerate(groups):
            target.append(_read_group(group, source, f"{where}[{i}]"))


def _read_group(group: Any, source: str, where: str) -> ClaudeHookMatcher:
    if not isinstance(group, Mapping):
        raise ConfigError(f"{source}: {where}: must be an object with matcher and hooks")
    matcher = group.get("matcher", "")
    if matcher is None:
        matcher = ""
    if not isinstance(matcher, str):
        raise ConfigError(f"{source}: {where}.matcher: must be a string")
    pattern = None
    if matcher.strip() not in ("", "*") and not _EXACT_MATCHER.fullmatch(matcher):
        try:
            pattern = re.compile(matcher)
        except re.error as exc:
            raise ConfigError(
                f"{source}: {where}.matcher: invalid regular expression: {exc}"
            ) from None
    hooks = group.get("hooks")
    if not isinstance(hooks, Sequence) or isinstance(hooks, str):
        raise ConfigError(f"{source}: {where}.hooks: must be a list of hook handlers")
    commands = tuple(
        _read_handler(handler, source, f"{where}.hooks[{j}]", matcher)
        for j, handler in enumerate(hooks)
    )
    return ClaudeHookMatcher(matcher, commands, pattern)


def _read_handler(handler: Any, source: str, where: str, matcher: str) -> ClaudeHookCommand:
    if not isinstance(handler, Mapping):
        raise ConfigError(f"{source}: {where}: must be an object")
    kind = handler.get("type")
    if kind != "command":
        if isinstance(kind, str):
            raise ConfigError(
                f"{source}: {where}.type: {kind!r} hooks are not supported by pi (only 'command')"
            )
        raise ConfigError(f"{source}: {where}.type: must be 'command'")
    if "if" in handler:
        raise ConfigError(f"{source}: {where}.if: hook conditions are not supported by pi")
    command = handler.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{source}: {where}.command: must be a non-empty string")
    timeout = handler.get("timeout")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigError(f"{source}: {where}.timeout: must be a positive number of seconds")
    for flag in ("async", "once"):
        if handler.get(flag) is not None and not isinstance(handler[flag], bool):
            raise ConfigError(f"{source}: {where}.{flag}: must be true or false")
    return ClaudeHookCommand(command, float(timeout), source, where, matcher)


# ================================================================================================
# Tool mapping
# ================================================================================================


class ClaudeInputError(ValueError):
    """An ``updatedInput`` that cannot be mapped back to pi's arguments (the message names the
    field: ``unknown field 'description' for Bash``)."""


def _number(value: float) -> float | int:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def claude_tool_name(tool_name: str, args: Mapping[str, Any] | None = None) -> str:
    """The Claude Code name of pi's ``tool_name`` (``edit`` with more than one replacement is
    ``MultiEdit``); other names unchanged."""
    if tool_name == "edit":
        edits = args.get("edits") if isinstance(args, Mapping) else None
        return "Edit" if isinstance(edits, list) and len(edits) == 1 else _MULTI_EDIT
    return CLAUDE_TOOL_NAMES.get(tool_name, tool_name)


def to_claude(tool_name: str, args: Mapping[str, Any], cwd: str) -> tuple[str, dict[str, Any]]:
    """``(claude_name, tool_input)`` of a pi call (see :data:`FIELD_MAP`). ``edit`` with exactly
    one replacement is ``Edit {file_path, old_string, new_string, replace_all: false}``, otherwise
    ``MultiEdit {file_path, edits: [{old_string, new_string}]}``. Other tools: their name and a
    copy of their arguments."""
    args = dict(args) if isinstance(args, Mapping) else {}
    name = claude_tool_name(tool_name, args)
    if tool_name == "edit":
        return name, _edit_to_claude(name, args, cwd)
    fields = FIELD_MAP.get(tool_name)
    if fields is None:
        return name, args
    out: dict[str, Any] = {}
    for key, value in args.items():
        target = fields.get(key, key)
        if target in _PATH_FIELDS and isinstance(value, str):
            value = resolve_to_cwd(value, cwd)
        elif tool_name == "bash" and key == "timeout" and _is_number(value):
            value = _number(value * 1000)
        out[target] = value
    if tool_name == "ls" and "path" not in out:
        out["path"] = resolve_to_cwd(".", cwd)
    return name, out


def _edit_to_claude(name: str, args: dict[str, Any], cwd: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key == "path":
            out["file_path"] = resolve_to_cwd(value, cwd) if isinstance(value, str) else value
        elif key == "edits":
            edits = value if isinstance(value, list) else []
            pairs = [_edit_pair(item) for item in edits]
            if name == "Edit":
                out.update(pairs[0])
                out["replace_all"] = False
            else:
                out["edits"] = pairs
        else:
            out[key] = value
    return out


def _edit_pair(item: Any) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        return {"old_string": item, "new_string": None}
    pair = {"old_string": item.get("oldText"), "new_string": item.get("newText")}
    pair.update({k: v for k, v in item.items() if k not in ("oldText", "newText")})
    return pair


def from_claude(
    tool_name: str,
    original_args: Mapping[str, Any],
    updated_input: Mapping[str, Any],
    cwd: str,
) -> dict[str, Any]:
    """pi's arguments for ``tool_name`` after a hook's ``updatedInput``: merged over the mapped
    original call (fields it does not give keep their values), then mapped back. Paths stay
    absolute. Raises :class:`ClaudeInputError` for a field the mapped tool does not have
    (``unknown field 'description' for Bash``) or a value that cannot be mapped back; the types of
    the result are not checked here (the caller re-validates against the tool's schema)."""
    name, mapped = to_claude(tool_name, original_args, cwd)
    merged = {**mapped, **dict(updated_input)}
    if tool_name == "edit":
        return _edit_from_claude(name, original_args, merged)
    fields = FIELD_MAP.get(tool_name)
    if fields is None:
        return merged
    back = {claude: pi for pi, claude in fields.items()}
    known = set(back) | {k for k in original_args if k not in fields}
    out: dict[str, Any] = {}
    for key, value in merged.items():
        if key not in known:
            raise ClaudeInputError(f"unknown field {key!r} for {name}")
        pi_key = back.get(key, key)
        if tool_name == "bash" and key == "timeout" and value is not None:
            if not _is_number(value):
                raise ClaudeInputError("Bash.timeout: must be a number of milliseconds")
            value = _number(value / 1000)
        out[pi_key] = value
    return out


def _edit_from_claude(
    name: str, original_args: Mapping[str, Any], merged: dict[str, Any]
) -> dict[str, Any]:
    extras = {k for k in original_args if k not in ("path", "edits")}
    own = (
        {"file_path", "old_string", "new_string", "replace_all"}
        if name == "Edit"
        else {
            "file_path",
            "edits",
        }
    )
    for key in merged:
        if key not in own and key not in extras:
            raise ClaudeInputError(f"unknown field {key!r} for {name}")
    out: dict[str, Any] = {"path": merged.get("file_path")}
    if name == "Edit":
        if merged.get("replace_all", False) is not False:
            raise ClaudeInputError("Edit.replace_all: pi's edit has no replace_all (only false)")
        out["edits"] = [{"oldText": merged.get("old_string"), "newText": merged.get("new_string")}]
    else:
        edits = merged.get("edits")
        if not isinstance(edits, list):
            raise ClaudeInputError("MultiEdit.edits: must be a list of objects")
        out["edits"] = [_edit_back(i, item) for i, item in enumerate(edits)]
    for key in extras:
        if key in merged:
            out[key] = merged[key]
    return out


def _edit_back(i: int, item: Any) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise ClaudeInputError(f"MultiEdit.edits[{i}]: must be an object")
    for key in item:
        if key not in ("old_string", "new_string", "replace_all"):
            raise ClaudeInputError(f"unknown field {key!r} for MultiEdit.edits[{i}]")
    if item.get("replace_all", False) is not False:
        raise ClaudeInputError(
            f"MultiEdit.edits[{i}].replace_all: pi's edit has no replace_all (only false)"
        )
    return {"oldText": item.get("old_string"), "newText": item.get("new_string")}


def tool_response(
    tool_name: str, args: Mapping[str, Any], result_text: str, is_error: bool, cwd: str
) -> dict[str, Any]:
    """The PostToolUse ``tool_response`` of a pi call (see the module docstring)."""
    name, tool_input = to_claude(tool_name, args, cwd)
    if name == "Bash":
        return {"stdout": result_text, "stderr": "", "interrupted": False, "isImage": False}
    response: dict[str, Any] = {}
    if name in ("Read", "Write", "Edit", _MULTI_EDIT) and "file_path" in tool_input:
        response["filePath"] = tool_input["file_path"]
    response["output"] = result_text
    response["success"] = not is_error
    return response


# ================================================================================================
# Outcomes
# ================================================================================================


@dataclass(frozen=True)
class HookRun:
    """What one hook command did.

    ``exit_code``: ``None`` when it timed out or could not start (negative: killed by that
    signal); ``stdout_json``: the JSON object it printed; ``stderr``: decoded, capped at
    :data:`REASON_LIMIT` characters; ``decision``: what this hook decided (PreToolUse:
    ``allow|deny|ask|defer``, PostToolUse: ``block``; an error under ``on_error="deny"`` is
    ``deny``/``block``; ``None`` for no decision or an ignored error); ``error``: why the run
    failed (``exit 1``, ``timed out after 60 s``...) or ``None``; ``reason``: the text this hook
    gives the model."""

    command: str
    source: str
    where: str
    matcher: str
    exit_code: int | None
    timed_out: bool
    stdout_json: dict[str, Any] | None
    stderr: str
    decision: str | None
    latency_seconds: float
    error: str | None = None
    reason: str = ""

    def describe(self) -> str:
        """One line for the audit log and ``pi policy check``: ``SOURCE WHERE (matcher "M"):
        COMMAND: exit 0, JSON {...}, decision deny``."""
        if self.timed_out:
            status = "timed out"
        elif self.exit_code is None:
            status = "did not start"
        else:
            status = f"exit {self.exit_code}"
        parts = [status]
        if self.stdout_json is not None:
            parts.append("JSON " + _cap(json.dumps(self.stdout_json, ensure_ascii=False)))
        if self.error is not None:
            parts.append(f"error: {self.error}")
        parts.append(f"decision {self.decision or 'none'}")
        return (
            f'{self.source} {self.where} (matcher "{self.matcher}"): {self.command}: '
            + ", ".join(parts)
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The fields as JSON values (for the audit log)."""
        return {
            "command": self.command,
            "source": self.source,
            "where": self.where,
            "matcher": self.matcher,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "stdout_json": self.stdout_json,
            "stderr": self.stderr,
            "decision": self.decision,
            "error": self.error,
            "reason": self.reason,
            "latency_seconds": self.latency_seconds,
        }


@dataclass(frozen=True)
class PreToolUseOutcome:
    """The combined PreToolUse result of one call.

    ``decision``: ``None`` when no hook decided (or none matched); ``reason``: the winning
    decision's reasons, joined by newlines; ``updated_input``: pi's arguments after the hooks'
    ``updatedInput`` (mapped back, NOT yet validated against the tool's schema), ``None`` when
    unchanged or denied; ``additional_context``: every hook's ``additionalContext``, in hook
    order; ``runs``: every hook that ran, in configuration order."""

    decision: Decision | None
    reason: str
    updated_input: dict[str, Any] | None
    additional_context: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)


@dataclass(frozen=True)
class PostToolUseOutcome:
    """The combined PostToolUse result of one call.

    ``block_reason``: text for the model when a hook blocked (newline-joined), else ``None``;
    ``replacement_text``: the tool result's new text from ``updatedToolOutput``, else ``None``;
    ``output_rejected``: why an ``updatedToolOutput`` was not used (original kept), else
    ``None``."""

    block_reason: str | None
    replacement_text: str | None
    additional_context: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)
    output_rejected: str | None = None


# ================================================================================================
# Running one command
# ================================================================================================


@dataclass
class _Raw:
    exit_code: int | None = None
    timed_out: bool = False
    start_error: str | None = None
    overflow: str | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    latency: float = 0.0


def _kill_group(process: trio.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        if process.returncode is None:
            process.kill()


async def _run_command(hook: ClaudeHookCommand, stdin: bytes, cwd: str) -> _Raw:
    raw = _Raw()
    start = trio.current_time()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": cwd}
    try:
        process = await trio.lowlevel.open_process(
            [SHELL, "-c", hook.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raw.start_error = str(exc)
        raw.latency = trio.current_time() - start
        return raw
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    eof = {"stdout": trio.Event(), "stderr": trio.Event()}

    async def feed() -> None:
        assert process.stdin is not None
        try:
            await process.stdin.send_all(stdin)
            await process.stdin.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def drain(name: str, stream: trio.abc.ReceiveStream) -> None:
        buffer = buffers[name]
        try:
            while chunk := await stream.receive_some(65536):
                buffer += chunk
                if len(buffer) > OUTPUT_LIMIT:
                    raw.overflow = raw.overflow or f"{name} over 1 MiB"
                    del buffer[OUTPUT_LIMIT:]
                    _kill_group(process)  # the group is gone: reading is done
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        eof[name].set()  # not when cancelled: then some process may still hold the pipe

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(feed)
            assert process.stdout is not None and process.stderr is not None
            nursery.start_soon(drain, "stdout", process.stdout)
            nursery.start_soon(drain, "stderr", process.stderr)
            with trio.move_on_after(hook.timeout) as scope:
                await process.wait()
            if scope.cancelled_caught:
                raw.timed_out = True
                _kill_group(process)
                await process.wait()
            with trio.move_on_after(DRAIN_SECONDS):
                await eof["stdout"].wait()
                await eof["stderr"].wait()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            # The group is killed while its leader runs, or while a process of it still holds a
            # pipe (then the group id cannot have been reused).
            if process.returncode is None or not all(e.is_set() for e in eof.values()):
                _kill_group(process)
            await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
    raw.exit_code = None if raw.timed_out else process.returncode
    raw.stdout = bytes(buffers["stdout"])
    raw.stderr = bytes(buffers["stderr"])
    raw.latency = trio.current_time() - start
    return raw


async def _run_all(
    hooks: Sequence[ClaudeHookCommand], payload: dict[str, Any], cwd: str
) -> list[_Raw]:
    stdin = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    results: list[_Raw] = [_Raw() for _ in hooks]

    async def one(i: int) -> None:
        results[i] = await _run_command(hooks[i], stdin, cwd)

    async with trio.open_nursery() as nursery:
        for i in range(len(hooks)):
            nursery.start_soon(one, i)
    return results


# ================================================================================================
# Interpreting a run
# ================================================================================================


def _cap(text: str, limit: int = REASON_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _seconds(value: float) -> str:
    return str(_number(value))


class _BadOutput(Exception):
    """A hook's JSON output breaks the protocol (message: what is wrong)."""


@dataclass
class _Verdict:
    """One run read: ``error`` (then nothing else counts) or what the hook said."""

    error: str | None = None
    blocked_exit2: bool = False
    data: dict[str, Any] | None = None


def _read_run(hook: ClaudeHookCommand, raw: _Raw) -> _Verdict:
    if raw.start_error is not None:
        return _Verdict(error=f"could not start: {raw.start_error}")
    if raw.timed_out:
        return _Verdict(error=f"timed out after {_seconds(hook.timeout)} s")
    if raw.overflow is not None:
        return _Verdict(error=raw.overflow)
    code = raw.exit_code
    if code == 2:
        return _Verdict(blocked_exit2=True)
    if code != 0:
        if code is not None and code < 0:
            return _Verdict(error=f"killed by signal {-code}")
        return _Verdict(error=f"exit {code}")
    text = raw.stdout.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return _Verdict()
    try:
        data = parse_json(text)
    except json.JSONDecodeError as exc:
        return _Verdict(error=f"invalid JSON output: {exc}")
    return _Verdict(data=data)  # text starting with "{" that parses is an object


_KIND_NAMES: dict[type, str] = {str: "a string", bool: "true or false", dict: "an object"}


def _get(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """``data[key]`` when present and of ``kind``; ``None`` when absent or null."""
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise _BadOutput(f"{where}{key} must be {_KIND_NAMES[kind]}")
    return value


def _hook_specific(data: Mapping[str, Any], event: str) -> dict[str, Any]:
    specific = _get(data, "hookSpecificOutput", dict, "")
    if specific is None:
        return {}
    name = specific.get("hookEventName")
    if name is not None and name != event:
        raise _BadOutput(f"hookSpecificOutput.hookEventName is {name!r}, not {event!r}")
    return specific


def _stderr_text(raw: _Raw) -> str:
    return _cap(raw.stderr.decode("utf-8", "replace").strip())


def _error_reason(event: str, hook: ClaudeHookCommand, error: str, stderr: str) -> str:
    text = f"{event} hook failed ({error}): {hook.command}"
    return f"{text}: {stderr}" if stderr else text


def _make_run(
    hook: ClaudeHookCommand,
    raw: _Raw,
    verdict: _Verdict,
    decision: str | None,
    error: str | None,
    reason: str,
) -> HookRun:
    return HookRun(
        command=hook.command,
        source=hook.source,
        where=hook.where,
        matcher=hook.matcher,
        exit_code=raw.exit_code,
        timed_out=raw.timed_out,
        stdout_json=verdict.data,
        stderr=_stderr_text(raw),
        decision=decision,
        latency_seconds=raw.latency,
        error=error,
        reason=reason,
    )


def _payload(
    event: str,
    *,
    session_id: str,
    transcript_path: str | None,
    cwd: str,
    claude_name: str,
    tool_input: dict[str, Any],
    tool_call_id: str,
    permission_mode: str,
) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": claude_name,
        "tool_input": tool_input,
        "tool_use_id": tool_call_id,
        "permission_mode": permission_mode,
    }


# ================================================================================================
# PreToolUse
# ================================================================================================

_PRECEDENCE: dict[str, int] = {"deny": 3, "defer": 2, "ask": 1, "allow": 0}
_DECISIONS = ("allow", "deny", "ask", "defer")


@dataclass
class _PreResult:
    decision: str | None = None
    reason: str = ""
    updated: dict[str, Any] | None = None
    context: str | None = None


def _read_pre(hook: ClaudeHookCommand, data: dict[str, Any]) -> _PreResult:
    result = _PreResult()
    specific = _hook_specific(data, "PreToolUse")
    decision = _get(specific, "permissionDecision", str, "hookSpecificOutput.")
    if decision is not None and decision not in _DECISIONS:
        raise _BadOutput(
            "hookSpecificOutput.permissionDecision must be one of allow, deny, ask, defer"
        )
    reason = _get(specific, "permissionDecisionReason", str, "hookSpecificOutput.")
    result.updated = _get(specific, "updatedInput", dict, "hookSpecificOutput.")
    result.context = _get(specific, "additionalContext", str, "hookSpecificOutput.")
    legacy = _get(data, "decision", str, "")
    if legacy is not None and legacy not in ("approve", "block"):
        raise _BadOutput('decision must be "approve" or "block"')
    legacy_reason = _get(data, "reason", str, "")
    keep_going = _get(data, "continue", bool, "")
    stop_reason = _get(data, "stopReason", str, "")
    if keep_going is False:
        result.decision = "deny"
        result.reason = stop_reason or f"Stopped by PreToolUse hook: {hook.command}"
    elif decision is not None:
        result.decision = decision
        result.reason = reason or ""
    elif legacy is not None:
        result.decision = "deny" if legacy == "block" else "allow"
        result.reason = legacy_reason or ""
    if result.decision == "deny" and not result.reason:
        result.reason = f"Blocked by PreToolUse hook: {hook.command}"
    elif result.decision == "ask" and not result.reason:
        result.reason = f"PreToolUse hook asks for approval: {hook.command}"
    result.reason = _cap(result.reason)
    return result


async def run_pre_tool_use(
    hooks: ClaudeHookSet,
    *,
    tool_name: str,
    args: Mapping[str, Any],
    tool_call_id: str,
    session_id: str,
    cwd: str,
    transcript_path: str | None = None,
    permission_mode: str = "default",
    on_error: OnError = "deny",
) -> PreToolUseOutcome:
    """Run the PreToolUse hooks matching the pi call ``tool_name(args)`` concurrently and combine
    their answers (module docstring). Never raises for a hook's misbehaviour: it becomes a run
    with an ``error`` (a deny under ``on_error="deny"``).

    Reasons: exit 2: the hook's stderr (stripped), or ``Blocked by PreToolUse hook: COMMAND``
    when empty; a JSON ``deny``: its ``permissionDecisionReason`` (legacy ``reason``), or the
    same default; ``continue: false``: its ``stopReason`` or ``Stopped by PreToolUse hook:
    COMMAND``; ``ask`` without a reason: ``PreToolUse hook asks for approval: COMMAND``; an error:
    ``PreToolUse hook failed (WHAT): COMMAND: STDERR`` (``: STDERR`` only when there is some),
    WHAT being ``exit 1``, ``timed out after 60 s``, ``killed by signal 9``, ``could not start:
    ...``, ``stdout over 1 MiB``, ``invalid JSON output: ...`` or ``invalid output: ...``;
    conflicting ``updatedInput``: ``PreToolUse hooks returned different updatedInput: CMD1;
    CMD2``; an ``updatedInput`` that cannot be mapped back: ``PreToolUse hook returned an invalid
    updatedInput: COMMAND: unknown field 'x' for Bash``."""
    claude_name, tool_input = to_claude(tool_name, args, cwd)
    matched = hooks.matching("PreToolUse", claude_name)
    if not matched:
        return PreToolUseOutcome(None, "", None, [], [])
    payload = _payload(
        "PreToolUse",
        session_id=session_id,
        transcript_path=transcript_path,
        cwd=cwd,
        claude_name=claude_name,
        tool_input=tool_input,
        tool_call_id=tool_call_id,
        permission_mode=permission_mode,
    )
    raws = await _run_all(matched, payload, cwd)
    runs: list[HookRun] = []
    results: list[_PreResult] = []
    for hook, raw in zip(matched, raws, strict=True):
        verdict = _read_run(hook, raw)
        result = _PreResult()
        error = verdict.error
        if error is None and verdict.blocked_exit2:
            stderr = _stderr_text(raw)
            result = _PreResult("deny", stderr or f"Blocked by PreToolUse hook: {hook.command}")
        elif error is None and verdict.data is not None:
            try:
                result = _read_pre(hook, verdict.data)
            except _BadOutput as exc:
                error = f"invalid output: {exc}"
        if error is not None:
            result = _PreResult()
            if on_error == "deny":
                result.decision = "deny"
                result.reason = _error_reason("PreToolUse", hook, error, _stderr_text(raw))
        runs.append(_make_run(hook, raw, verdict, result.decision, error, result.reason))
        results.append(result)
    context = [r.context for r in results if r.context]
    decided = [r for r in results if r.decision is not None]
    decision: Decision | None = None
    reason = ""
    if decided:
        decision = cast(
            Decision, max((r.decision or "" for r in decided), key=_PRECEDENCE.__getitem__)
        )
        reason = "\n".join(r.reason for r in decided if r.decision == decision and r.reason)
    updated: dict[str, Any] | None = None
    if decision != "deny":
        merged: list[tuple[ClaudeHookCommand, dict[str, Any]]] = [
            (hook, {**tool_input, **r.updated})
            for hook, r in zip(matched, results, strict=True)
            if r.updated is not None and r.decision != "deny"
        ]
        distinct: list[tuple[ClaudeHookCommand, dict[str, Any]]] = []
        for hook, value in merged:
            if all(value != other for _, other in distinct):
                distinct.append((hook, value))
        if len(distinct) > 1:
            names = "; ".join(hook.command for hook, _ in distinct)
            return PreToolUseOutcome(
                "deny",
                f"PreToolUse hooks returned different updatedInput: {names}",
                None,
                context,
                runs,
            )
        if distinct:
            hook, value = distinct[0]
            try:
                updated = from_claude(tool_name, args, value, cwd)
            except ClaudeInputError as exc:
                return PreToolUseOutcome(
                    "deny",
                    f"PreToolUse hook returned an invalid updatedInput: {hook.command}: {exc}",
                    None,
                    context,
                    runs,
                )
    return PreToolUseOutcome(decision, reason, updated, context, runs)


# ================================================================================================
# PostToolUse
# ================================================================================================


@dataclass
class _PostResult:
    block: str | None = None
    output: Any = None
    has_output: bool = False
    context: str | None = None


def _read_post(hook: ClaudeHookCommand, data: dict[str, Any]) -> _PostResult:
    result = _PostResult()
    specific = _hook_specific(data, "PostToolUse")
    result.context = _get(specific, "additionalContext", str, "hookSpecificOutput.")
    if "updatedToolOutput" in specific:
        result.has_output = True
        result.output = specific["updatedToolOutput"]
    legacy = _get(data, "decision", str, "")
    if legacy is not None and legacy not in ("approve", "block"):
        raise _BadOutput('decision must be "approve" or "block"')
    reason = _get(data, "reason", str, "")
    keep_going = _get(data, "continue", bool, "")
    stop_reason = _get(data, "stopReason", str, "")
    if keep_going is False:
        result.block = _cap(stop_reason or f"Stopped by PostToolUse hook: {hook.command}")
    elif legacy == "block":
        result.block = _cap(reason or f"Blocked by PostToolUse hook: {hook.command}")
    return result


def _replacement(output: Any, response: Mapping[str, Any]) -> str | None:
    """The new text of an ``updatedToolOutput``, ``None`` when its shape does not match."""
    if isinstance(output, str):
        return output
    if not isinstance(output, Mapping) or not set(output) <= set(response):
        return None
    key = "stdout" if "stdout" in response else "output"
    text = output.get(key)
    if not isinstance(text, str):
        return None
    stderr = output.get("stderr", "")
    if key == "stdout" and stderr:
        if not isinstance(stderr, str):
            return None
        return f"{text}\n{stderr}" if text else stderr
    return text


async def run_post_tool_use(
    hooks: ClaudeHookSet,
    *,
    tool_name: str,
    args: Mapping[str, Any],
    result_text: str,
    is_error: bool,
    tool_call_id: str,
    session_id: str,
    cwd: str,
    transcript_path: str | None = None,
    permission_mode: str = "default",
    on_error: OnError = "deny",
) -> PostToolUseOutcome:
    """Run the PostToolUse hooks matching the finished pi call concurrently and combine their
    answers (module docstring). Never raises for a hook's misbehaviour.

    Reasons: exit 2: stderr, or ``Blocked by PostToolUse hook: COMMAND``; ``decision: "block"``:
    its ``reason`` or the same default; ``continue: false``: ``stopReason`` or ``Stopped by
    PostToolUse hook: COMMAND``; an error under ``on_error="deny"``: ``PostToolUse hook failed
    (WHAT): COMMAND: STDERR``. ``output_rejected``: ``updatedToolOutput of COMMAND does not match
    the tool_response shape (original output kept)`` or ``PostToolUse hooks returned different
    updatedToolOutput: CMD1; CMD2 (original output kept)``."""
    claude_name, tool_input = to_claude(tool_name, args, cwd)
    matched = hooks.matching("PostToolUse", claude_name)
    if not matched:
        return PostToolUseOutcome(None, None, [], [])
    response = tool_response(tool_name, args, result_text, is_error, cwd)
    payload = _payload(
        "PostToolUse",
        session_id=session_id,
        transcript_path=transcript_path,
        cwd=cwd,
        claude_name=claude_name,
        tool_input=tool_input,
        tool_call_id=tool_call_id,
        permission_mode=permission_mode,
    )
    payload["tool_response"] = response
    raws = await _run_all(matched, payload, cwd)
    runs: list[HookRun] = []
    results: list[_PostResult] = []
    for hook, raw in zip(matched, raws, strict=True):
        verdict = _read_run(hook, raw)
        result = _PostResult()
        error = verdict.error
        if error is None and verdict.blocked_exit2:
            result.block = _stderr_text(raw) or f"Blocked by PostToolUse hook: {hook.command}"
        elif error is None and verdict.data is not None:
            try:
                result = _read_post(hook, verdict.data)
            except _BadOutput as exc:
                error = f"invalid output: {exc}"
        if error is not None:
            result = _PostResult()
            if on_error == "deny":
                result.block = _error_reason("PostToolUse", hook, error, _stderr_text(raw))
        decision = "block" if result.block is not None else None
        runs.append(_make_run(hook, raw, verdict, decision, error, result.block or ""))
        results.append(result)
    blocks = [r.block for r in results if r.block is not None]
    context = [r.context for r in results if r.context]
    replacement: str | None = None
    rejected: str | None = None
    outputs: list[tuple[ClaudeHookCommand, str | None]] = [
        (hook, _replacement(r.output, response))
        for hook, r in zip(matched, results, strict=True)
        if r.has_output
    ]
    bad = [hook for hook, text in outputs if text is None]
    texts = {text for _, text in outputs if text is not None}
    if bad:
        rejected = (
            f"updatedToolOutput of {bad[0].command} does not match the tool_response shape "
            "(original output kept)"
        )
    elif len(texts) > 1:
        names = "; ".join(hook.command for hook, _ in outputs)
        rejected = f"PostToolUse hooks returned different updatedToolOutput: {names} " + (
            "(original output kept)"
        )
    elif texts:
        replacement = texts.pop()
    return PostToolUseOutcome(
        "\n".join(blocks) if blocks else None, replacement, context, runs, rejected
    )


__all__ = [
    "CLAUDE_TOOL_NAMES",
    "DEFAULT_TIMEOUT",
    "FIELD_MAP",
    "OUTPUT_LIMIT",
    "REASON_LIMIT",
    "ClaudeHookCommand",
    "ClaudeHookMatcher",
    "ClaudeHookSet",
    "ClaudeInputError",
    "HookRun",
    "PostToolUseOutcome",
    "PreToolUseOutcome",
    "claude_tool_name",
    "from_claude",
    "run_post_tool_use",
    "run_pre_tool_use",
    "to_claude",
    "tool_response",
]
