"""What ``pi`` prints when it is not asked for JSON (``docs/reference/cli.md``).

On a terminal the output is styled with rich (tool call header in bold, errors in red); when
stdout is not a terminal it is plain text, exactly as below, so it can be piped and tested.

A tool result of ``pi replay``::

    echo {"value":"x"}            header: tool name and the call's raw arguments (compact JSON)
    x                             the result's text blocks, each ending in a newline

    nope {} [error]               an error result is marked in the header
    Tool nope not found

A string in the arguments longer than :data:`ARGUMENT_LIMIT` (200) characters is shown as its
first 200 characters and `` … (N chars)`` (N: its full length), here and in ``pi call`` and
``pi run``; JSON output is never shortened.

Results are separated by an empty line; an image block prints as ``[image image/png, 1.3KB]``.
``pi call`` prints the header only on a terminal: its plain output is the result's content
alone (``isError`` is the exit status).

``pi tools``: one paragraph per tool::

    echo [parallel]
      Echo a value back.
      parameters: {"type":"object",...}

``pi plugins``: a table with the columns ``name``, ``distribution``, ``version``, ``hooks``
(``-`` where a plugin has no distribution or version).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

from pi_core._cli.terminal import TerminalWriter, is_terminal
from pi_core._tools.format import format_size
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
)

if TYPE_CHECKING:
    from pi_core._tools.definition import AgentTool


def compact_json(value: Any) -> str:
    """One-line JSON, non-ASCII kept (``{"a":1}``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


ARGUMENT_LIMIT = 200
"""Characters of an argument string the human rendering shows before shortening it."""


def shorten_arguments(value: Any, limit: int = ARGUMENT_LIMIT) -> Any:
    """``value`` with every string longer than ``limit`` characters (in nested dicts and lists
    too, keys excepted) replaced by its first ``limit`` characters and `` … (N chars)``, N being
    its full length. For display only: a 200 MB ``write`` content must not reach the screen."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}… ({len(value)} chars)"
    if isinstance(value, dict):
        return {k: shorten_arguments(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_arguments(v, limit) for v in value]
    return value


def _image_label(block: ImageContent) -> str:
    try:
        size = len(base64.b64decode(block.data, validate=False))
    except (binascii.Error, ValueError):
        size = len(block.data)
    return f"[image {block.mime_type}, {format_size(size)}]"


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _render_with(render: Callable[[Any], Any] | None, value: Any) -> str | None:
    """``render(value)`` when it is a non-empty string; ``None`` when there is no renderer, it
    raises or returns anything else (a plugin's renderer must not break pi's output)."""
    if render is None:
        return None
    try:
        text = render(value)
    except Exception:
        return None
    return text if isinstance(text, str) and text else None


def call_header(tool: AgentTool | None, name: str, args: Any) -> str:
    """A call as one line: the tool's ``render_call`` (on shortened arguments) when it has one
    that works, else ``NAME {compact JSON arguments}`` (``NAME`` alone without arguments)."""
    shown = shorten_arguments(args)
    rendered = _render_with(tool.render_call if tool is not None else None, shown)
    if rendered is not None:
        return rendered
    return name if args is None else f"{name} {compact_json(shown)}"


def rendered_result(tool: AgentTool | None, result: AgentToolResult) -> str | None:
    """The tool's ``render_result`` of ``result``, or ``None`` (no renderer, or it failed)."""
    return _render_with(tool.render_result if tool is not None else None, result)


_CALLER_WORDS = {"model": "the model"}
"""How ``pi tools`` writes a ``callableBy`` entry in a sentence."""


class Renderer:
    """Writes human-readable output to ``file`` through one
    :class:`~pi_core._cli.terminal.TerminalWriter`: every text sanitised, rich styling when
    ``styled`` (default: :func:`~pi_core._cli.terminal.wants_styling`: a terminal or
    ``FORCE_COLOR``, unless ``NO_COLOR``), plain text otherwise; styled output looks as on a
    terminal (``pi call`` shows its header)."""

    def __init__(self, file: IO[str], *, styled: bool | None = None) -> None:
        self.file = file
        self.out = TerminalWriter(file, styled=styled)
        self.styled = self.out.styled
        self.console = self.out.console
        #: a person reads the output (a terminal, styled or not): ``pi call`` shows the header
        self.terminal = self.styled or is_terminal(file)
        self._results = 0

    # -- tool results ----------------------------------------------------------------------

    def call_result(
        self, message: ToolResultMessage, arguments: Any = None, tool: AgentTool | None = None
    ) -> None:
        """``pi call``: on a terminal the call header (the tool's ``render_call``) and the
        result (its ``render_result``); in plain text only the result's content (what the
        model sees), so ``pi call ... > file`` keeps just that (``isError`` is the exit
        status). Renderers are for the terminal: piped, the edit's diff is not printed."""
        self.tool_result(
            message, arguments, header=self.terminal, tool=tool if self.terminal else None
        )

    def tool_result(
        self,
        message: ToolResultMessage,
        arguments: Any = None,
        *,
        header: bool = True,
        tool: AgentTool | None = None,
    ) -> None:
        """Print one tool result, after its call header unless ``header`` is false
        (``arguments``: the call's raw arguments; ``None`` when unknown). With ``tool`` its
        ``render_call`` gives the header and its ``render_result`` the body."""
        if self._results:
            self.out.write("\n")
        self._results += 1
        error = bool(message.is_error)
        if header:
            if tool is not None:
                title = call_header(tool, message.tool_name, arguments)
                self.out.pieces((title, "bold red" if error else "bold cyan"))
            else:
                shown = shorten_arguments(arguments)
                self.out.pieces(
                    (message.tool_name, "bold red" if error else "bold cyan"),
                    ("" if arguments is None else " " + compact_json(shown), "dim"),
                )
            self.out.pieces((" [error]" if error else "", "bold red"), ("\n", ""))
        body_style = "red" if error else ""
        rendered = None
        if tool is not None:
            result = AgentToolResult(
                content=list(message.content), details=message.details, is_error=error
            )
            rendered = rendered_result(tool, result)
        if rendered is not None:
            self.out.pieces((_with_newline(rendered), body_style))
        else:
            for block in message.content:
                if isinstance(block, TextContent):
                    self.out.pieces((_with_newline(block.text), body_style))
                else:
                    self.out.pieces((_image_label(block), "magenta"), ("\n", ""))
        self.out.flush()

    # -- pi tools ----------------------------------------------------------------------------

    def tools(self, tools: Sequence[dict[str, Any]]) -> None:
        """Print tool descriptions; each item has the keys of ``pi tools --json``. The header
        line is ``NAME [MODE] EXPOSURE, active|inactive, callable by the model, nested calls
        and pi call`` (the places ``callableBy`` names)."""
        if not tools:
            self.out.write("no tools registered\n")
            return
        for index, info in enumerate(tools):
            if index:
                self.out.write("\n")
            description = info["description"].strip("\n")
            parameters = compact_json(info["parameters"])
            sets = ""
            if "exposure" in info:
                by = [_CALLER_WORDS.get(c, c) for c in info.get("callableBy", [])]
                listed = ", ".join(by[:-1]) + " and " + by[-1] if len(by) > 1 else "".join(by)
                sets = (
                    f" {info['exposure']}, {'active' if info.get('active') else 'inactive'}, "
                    + (f"callable by {listed}" if listed else "not callable")
                )
            self.out.pieces(
                (info["name"], "bold cyan"),
                (f" [{info['executionMode']}]", "dim"),
                (sets, ""),
                ("\n", ""),
            )
            if info.get("namespace"):
                self.out.pieces(("  namespace: ", "dim"), (info["namespace"], ""), ("\n", ""))
            for line in description.splitlines():
                self.out.write(f"  {line}\n" if line else "\n")
            self.out.pieces(("  parameters: ", "dim"), (parameters, ""), ("\n", ""))

    # -- pi plugins --------------------------------------------------------------------------

    def plugins(self, plugins: Sequence[dict[str, Any]]) -> None:
        """Print the plugin table; each item has the keys of ``pi plugins --json``."""
        if not plugins:
            self.out.write("no plugins loaded\n")
            return
        rows = [
            [
                p["name"],
                p.get("distribution") or "-",
                p.get("version") or "-",
                ", ".join(p.get("hooks") or []) or "-",
            ]
            for p in plugins
        ]
        self.out.table(["name", "distribution", "version", "hooks"], rows)


# ---------------------------------------------------------------------------------------------
# pi run: the live view of a run
# ---------------------------------------------------------------------------------------------

RESULT_PREVIEW_LINES = 8
"""Lines of a tool result ``pi run`` shows (bash output and edit diffs are shown whole)."""

_NOTICE = re.compile(r"^\[.*\]$")


def _continuation(shown: str, text: str) -> int | None:
    """Where ``text`` (a newer snapshot of a bash output) continues what was ``shown`` (whole
    lines): after it when it is a prefix; when the rolling window dropped lines from the front,
    after the longest start of ``text`` that ``shown`` ends with; ``None`` when they do not
    overlap."""
    if text.startswith(shown):
        return len(shown)
    last_line = shown[shown.rfind("\n", 0, len(shown) - 1) + 1 :]
    at = text.find(last_line)
    while at >= 0:
        end = at + len(last_line)
        if shown.endswith(text[:end]):
            return end
        at = text.find(last_line, at + 1)
    return None


def _indent(line: str) -> str:
    return "  " + line if line else ""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def closing_line(turns: int, tool_calls: int, errors: int, seconds: float) -> str:
    """``5 turns, 6 tool calls, 1 error, 0.3s`` (the end of ``pi run``)."""
    return (
        f"{_plural(turns, 'turn')}, {_plural(tool_calls, 'tool call')}, "
        f"{_plural(errors, 'error')}, {seconds:.1f}s"
    )


def call_summary(name: str, args: Any, tool: AgentTool | None = None) -> str:
    """How ``pi run`` shows a call as it starts: the tool's ``render_call`` (``bash $
    COMMAND``, ``edit PATH``), else ``NAME {compact args}``; long strings shortened by
    :func:`shorten_arguments` (:func:`call_header`)."""
    return call_header(tool, name, args)


class RunView:
    """Renders the agent events of ``pi run`` on ``file`` as they come.

    Plain text (stdout not a terminal), each piece on its own lines::

        model: scripted:/path/demo-session.jsonl            (from :meth:`intro`)
        cwd: /tmp/pi-demo-x1y2

        I'll run the tests first.                           assistant text, streamed
        • bash $ python3 test_stats.py                      a call as it starts
          FAIL mean([1, 2, 3]): got 3.0, want 2.0           bash output, live from the updates
          Command exited with code 1                        the rest of the final result
        • edit stats.py
          ...                                                the edit's diff
        • grep {"pattern":"def mean"}
          stats.py:4: def mean(values):                     first 8 lines of other results,
          … 12 more lines                                    then how many are left,
          [50 matches limit reached. ...]                   and the truncation notice
        error: 429 Too Many Requests                        a failed model call

        5 turns, 6 tool calls, 1 error, 0.3s                (from :meth:`closing`)

    A nested call (an event with a ``parent_tool_call_id``: a call a tool made, such as a
    script's) is shown as it happens, indented under its parent (two more spaces a level),
    with its status; its updates and result are not shown (its parent's result says what
    matters), and the closing counts count the model's calls only::

        • codemode {"code":"..."}
          running read a.txt
          ok      read a.txt
          running read missing.txt
          error   read missing.txt: ENOENT: no such file or directory, ...
          Script completed

    Result lines are indented by two spaces. On a terminal the same text is styled with rich:
    calls bold cyan, error results and failures red, diff lines green/red, notices yellow,
    bash output dim, the closing line bold.
    """

    def __init__(
        self,
        file: IO[str],
        *,
        styled: bool | None = None,
        tools: Iterable[AgentTool] = (),
    ) -> None:
        #: the run's tools by name: their declarations (``render_call``, ``render_result``,
        #: ``streaming``) say how their calls and results look
        self.tools = {t.name: t for t in tools}
        self.base = Renderer(file, styled=styled)
        self.file = file
        self.styled = self.base.styled
        self.console = self.base.console
        self.turns = 0
        self.tool_calls = 0
        self.errors = 0
        self._column0 = True  # the cursor is at the start of a line
        self._streamed: set[int] = set()  # content indexes streamed in the current message
        self._shown: dict[str, str] = {}  # bash output shown so far, per tool call id
        self._args: dict[str, Any] = {}
        self._last_header: str | None = None  # the call whose header was printed last
        self._running: list[str] = []  # calls whose result is not shown yet, in start order
        self._ended: dict[str, Any] = {}  # finished calls waiting for an earlier one
        self._blank = True  # the last line printed was empty (or nothing was printed)
        self._parents: dict[str, str] = {}  # nested call id -> its parent's call id
        self._root_names: dict[str, str] = {}  # model-issued call id -> tool name

    # -- low-level output -------------------------------------------------------------------

    def _out(self, text: str, style: str = "") -> None:
        if not text:
            return
        self._blank = text == "\n" and self._column0
        self.base.out.write(text, style)
        self.file.flush()
        self._column0 = text.endswith("\n")

    def _line(self, text: str, style: str = "") -> None:
        """``text`` on its own line (a newline first if the cursor is inside a line)."""
        if not self._column0:
            self._out("\n")
        self._out(text.rstrip(" ") + "\n", style)

    def _block(self, text: str, style: str = "") -> None:
        """``text`` indented by two spaces, each line styled by :meth:`_style_of`."""
        for line in text.split("\n"):
            self._line(_indent(line), style or self._style_of(line))

    @staticmethod
    def _style_of(line: str) -> str:
        return "yellow" if _NOTICE.match(line) else ""

    # -- what pi run calls ------------------------------------------------------------------

    def intro(self, model: str, cwd: str, note: str | None = None) -> None:
        """The first lines: the model and the working directory (and ``note``)."""
        self._line(f"model: {model}", "dim")
        self._line(f"cwd: {cwd}" + (f" ({note})" if note else ""), "dim")
        self._line("")

    def notice(self, text: str, style: str = "yellow") -> None:
        """A line of pi's own (``stopped after 3 turns (--max-turns 3)``)."""
        self._line(text, style)

    def closing(self, seconds: float, *, interrupted: bool = False) -> None:
        """An empty line, then :func:`closing_line` (prefixed ``interrupted: `` after
        Ctrl-C)."""
        text = closing_line(self.turns, self.tool_calls, self.errors, seconds)
        self._line("")
        self._line(("interrupted: " if interrupted else "") + text, "bold")

    def event(self, event: Any) -> None:
        """Render one agent event."""
        kind = event.type
        if kind == "message_start" and getattr(event.message, "role", None) == "assistant":
            self._streamed = set()
            if not self._blank:
                self._line("")
            self._last_header = None
        elif kind == "message_update":
            self._update(event)
        elif kind == "message_end":
            if getattr(event.message, "role", None) == "assistant":
                self._assistant_end(event.message)
        elif kind == "turn_end":
            self.turns += 1
        elif kind.startswith("tool_execution_") and self._nested_event(event):
            return
        elif kind == "tool_execution_start":
            self.tool_calls += 1
            self._args[event.tool_call_id] = event.args
            self._running.append(event.tool_call_id)
            self._root_names[event.tool_call_id] = event.tool_name
            self._header(event.tool_call_id, event.tool_name, "• ")
        elif kind == "tool_execution_update":
            tool = self.tools.get(event.tool_name)
            if tool is not None and tool.streaming:
                self._bash_output(event.tool_call_id, event.tool_name, event.partial_result)
        elif kind == "tool_execution_end":
            if event.is_error:
                self.errors += 1
            self._ended[event.tool_call_id] = event
            # results are shown in the order the calls started (a parallel batch ends in any
            # order): each waits for the calls before it
            while self._running and self._running[0] in self._ended:
                self._tool_end(self._ended.pop(self._running.pop(0)))

    def _nested_event(self, event: Any) -> bool:
        """Show an event of a nested call (one with a ``parent_tool_call_id``: a call a tool
        made, such as a script's): a status line indented under its parent, ``running`` when
        it starts, ``ok`` or ``error: FIRST LINE`` when it ends; its updates are not shown.
        ``False`` for an event of a model-issued call."""
        parent = getattr(event, "parent_tool_call_id", None)
        if parent is None:
            return False
        call_id = event.tool_call_id
        if event.type == "tool_execution_start":
            self._parents[call_id] = parent
            self._args[call_id] = event.args
            status, style, detail = "running", "dim", ""
        elif event.type == "tool_execution_end":
            if event.is_error:
                text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
                first = next((line for line in text.split("\n") if line.strip()), "")
                status, style, detail = "error", "red", f": {first}" if first else ""
            else:
                status, style, detail = "ok", "green", ""
        else:
            return True
        self._parents.setdefault(call_id, parent)
        depth, root = 1, parent
        while root in self._parents:
            depth, root = depth + 1, self._parents[root]
        if root in self._root_names:
            self._owner(root, self._root_names[root])
        summary = self._summary(event.tool_name, self._args.get(call_id))
        self._line("  " * depth + f"{status:<7} {summary}{detail}", style)
        if event.type == "tool_execution_end":
            self._args.pop(call_id, None)
        return True

    def _header(self, call_id: str, name: str, mark: str) -> None:
        """``• SUMMARY`` when a call starts; ``↳ SUMMARY`` before output of a call whose
        header is not the last one printed (parallel calls)."""
        style = "bold cyan" if mark == "• " else "cyan"
        self._line(mark + self._summary(name, self._args.get(call_id)), style)
        self._last_header = call_id

    def _summary(self, name: str, args: Any) -> str:
        """The tool's ``render_call`` (on shortened arguments) when it has one and it works,
        else the generic summary (:func:`call_header`)."""
        return call_header(self.tools.get(name), name, args)

    def _owner(self, call_id: str, name: str) -> None:
        if self._last_header != call_id:
            self._header(call_id, name, "↳ ")

    # -- assistant messages -----------------------------------------------------------------

    def _update(self, event: Any) -> None:
        delta = event.assistant_message_event
        kind = delta.get("type")
        index = delta.get("contentIndex", 0)
        if kind in ("text_start", "thinking_start"):
            if not self._column0:
                self._out("\n")
        elif kind in ("text_delta", "thinking_delta"):
            self._streamed.add(index)
            self._out(delta.get("delta") or "", "dim italic" if kind == "thinking_delta" else "")
        elif kind in ("text_end", "thinking_end") and index in self._streamed:
            if not self._column0:
                self._out("\n")

    def _assistant_end(self, message: AssistantMessage) -> None:
        for index, block in enumerate(message.content):
            if index in self._streamed:
                continue
            if isinstance(block, TextContent) and block.text:
                self._line(block.text.rstrip("\n"))
            elif isinstance(block, ThinkingContent) and block.thinking:
                self._line(block.thinking.rstrip("\n"), "dim italic")
        if message.stop_reason == "error":
            self.errors += 1
            self._line(f"error: {message.error_message or 'the model call failed'}", "bold red")
        elif message.stop_reason == "aborted":
            self._line("aborted", "bold yellow")
        elif message.stop_reason == "length":
            self._line("the model's answer was cut off (stopReason: length)", "yellow")

    # -- tools ------------------------------------------------------------------------------

    def _bash_output(self, call_id: str, name: str, partial: AgentToolResult) -> None:
        text = "".join(b.text for b in partial.content if isinstance(b, TextContent))
        shown = self._shown.get(call_id, "")
        found = _continuation(shown, text)
        if text[found or 0 :].count("\n"):
            self._owner(call_id, name)
        if found is None:
            self._line("  …", "dim")
        start = found or 0
        # whole lines only; a partial last line waits for the next update or the end
        cut = text.rfind("\n", start) + 1
        if cut > start:
            self._block(text[start : cut - 1], "dim")
            self._shown[call_id] = text[:cut]
        elif call_id not in self._shown:
            self._shown[call_id] = ""

    def _tool_end(self, event: Any) -> None:
        result = event.result
        text = "".join(b.text for b in result.content if isinstance(b, TextContent))
        images = [b for b in result.content if isinstance(b, ImageContent)]
        error_style = "red" if event.is_error else ""
        self._owner(event.tool_call_id, event.tool_name)
        tool = self.tools.get(event.tool_name)
        streaming = tool is not None and tool.streaming
        if streaming and event.tool_call_id in self._shown:
            shown = self._shown.pop(event.tool_call_id)
            start = _continuation(shown, text)
            rest = text[start:] if start is not None else text
            if rest.strip("\n"):
                self._block(rest.strip("\n"), error_style)
            return
        rendered = rendered_result(tool, result)
        if rendered is not None:
            for line in rendered.strip("\n").split("\n"):
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
                self._line(_indent(line), error_style or style or "dim")
            return
        for image in images:
            self._line("  " + _image_label(image), "magenta")
        if not text:
            return
        lines = text.rstrip("\n").split("\n")
        notices: list[str] = []
        while lines and _NOTICE.match(lines[-1]):
            notices.insert(0, lines.pop())
        while lines and not lines[-1]:
            lines.pop()
        limit = len(lines) if streaming else RESULT_PREVIEW_LINES
        for line in lines[:limit]:
            self._line(_indent(line), error_style)
        if len(lines) > limit:
            self._line(f"  … {len(lines) - limit} more lines", "dim")
        for line in notices:
            self._line("  " + line, "yellow")


__all__ = [
    "ARGUMENT_LIMIT",
    "Renderer",
    "RunView",
    "call_header",
    "call_summary",
    "closing_line",
    "compact_json",
    "format_size",
    "rendered_result",
    "shorten_arguments",
]
