"""``pi_core._cli.render.RunView``: how ``pi run`` shows events, fed with real event objects."""

from __future__ import annotations

import io

from pi_core import AgentTool, build_session, make_plugin_manager
from pi_core._cli.render import RunView, call_summary, closing_line
from pi_core._wire.events import (
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
)
from pi_core._wire.messages import AgentToolResult, AssistantMessage, TextContent, ThinkingContent


def builtin_tools() -> list[AgentTool]:
    """The built-in tools, as a session registers them (their declarations say how they look)."""
    import pi_builtin_tools.plugin

    pm = make_plugin_manager(autoload=False)
    pm.register(pi_builtin_tools.plugin, name="builtin_tools")
    return list(build_session(pm, ".", {}).tools)


BUILTINS = {t.name: t for t in builtin_tools()}


def text_result(text: str) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)])


def start(call_id: str, name: str, args: object) -> ToolExecutionStartEvent:
    return ToolExecutionStartEvent(tool_call_id=call_id, tool_name=name, args=args)


def end(call_id: str, name: str, text: str, *, error: bool = False) -> ToolExecutionEndEvent:
    return ToolExecutionEndEvent(
        tool_call_id=call_id, tool_name=name, result=text_result(text), is_error=error
    )


def update(call_id: str, text: str) -> ToolExecutionUpdateEvent:
    return ToolExecutionUpdateEvent(
        tool_call_id=call_id, tool_name="bash", args={}, partial_result=text_result(text)
    )


def test_a_long_result_is_cut_to_eight_lines_and_keeps_its_truncation_notice() -> None:
    out = io.StringIO()
    view = RunView(out, tools=BUILTINS.values())
    lines = "\n".join(f"line {i}" for i in range(1, 13))
    view.event(start("c1", "read", {"path": "big.txt", "limit": 12}))
    view.event(end("c1", "read", lines + "\n\n[88 more lines in file. Use offset=13 to continue.]"))
    assert out.getvalue() == (
        "• read big.txt:1-12\n"
        + "".join(f"  line {i}\n" for i in range(1, 9))
        + "  … 4 more lines\n"
        "  [88 more lines in file. Use offset=13 to continue.]\n"
    )


def test_bash_output_from_a_rolling_window_is_shown_once() -> None:
    out = io.StringIO()
    view = RunView(out, tools=BUILTINS.values())
    view.event(start("b", "bash", {"command": "seq 5"}))
    view.event(update("b", "1\n2\n"))
    view.event(update("b", "1\n2\n3"))  # a partial line waits
    view.event(update("b", "2\n3\n4\n"))  # the window dropped "1"
    view.event(end("b", "bash", "3\n4\n5\n\n[Showing lines 3-5 of 5. Full output: /tmp/x.log]"))
    assert out.getvalue() == (
        "• bash $ seq 5\n"
        "  1\n"
        "  2\n"
        "  3\n"
        "  4\n"
        "  5\n"
        "\n"
        "  [Showing lines 3-5 of 5. Full output: /tmp/x.log]\n"
    )


def test_parallel_results_come_in_call_order_with_a_pointer_to_their_call() -> None:
    out = io.StringIO()
    view = RunView(out, tools=BUILTINS.values())
    view.event(start("a", "ls", {"path": "."}))
    view.event(start("b", "find", {"pattern": "*.py"}))
    view.event(end("b", "find", "x.py"))  # finished first, shown second
    view.event(end("a", "ls", "nope", error=True))
    assert out.getvalue() == (
        '• ls {"path":"."}\n'
        '• find {"pattern":"*.py"}\n'
        '↳ ls {"path":"."}\n'
        "  nope\n"
        '↳ find {"pattern":"*.py"}\n'
        "  x.py\n"
    )
    assert (view.tool_calls, view.errors) == (2, 1)


def test_streamed_text_and_thinking_then_a_message_that_did_not_stream() -> None:
    out = io.StringIO()
    view = RunView(out, tools=BUILTINS.values())
    partial = AssistantMessage(content=[])
    view.event(MessageStartEvent(message=partial))
    for kind, delta in [("thinking_start", None), ("thinking_delta", "hmm"),
                        ("thinking_end", None), ("text_start", None), ("text_delta", "Hel"),
                        ("text_delta", "lo"), ("text_end", None)]:  # fmt: skip
        index = 0 if kind.startswith("thinking") else 1
        event = {"type": kind, "contentIndex": index}
        if delta is not None:
            event["delta"] = delta
        view.event(MessageUpdateEvent(message=partial, assistant_message_event=event))
    final = AssistantMessage(
        content=[ThinkingContent(thinking="hmm"), TextContent(text="Hello")], stop_reason="stop"
    )
    view.event(MessageEndEvent(message=final))
    view.event(TurnEndEvent(message=final))
    whole = AssistantMessage(content=[TextContent(text="Second.")], stop_reason="length")
    view.event(MessageStartEvent(message=whole))
    view.event(MessageEndEvent(message=whole))
    view.event(TurnEndEvent(message=whole))
    view.closing(1.25)
    assert out.getvalue() == (
        "hmm\n"
        "Hello\n"
        "\n"
        "Second.\n"
        "the model's answer was cut off (stopReason: length)\n"
        "\n"
        "2 turns, 0 tool calls, 0 errors, 1.2s\n"
    )


def test_styled_output_colours_errors_and_diff_lines() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    view = RunView(out, tools=BUILTINS.values())
    assert view.styled
    view.event(start("e", "edit", {"path": "a.py"}))
    result = AgentToolResult(
        content=[TextContent(text="Successfully replaced 1 block(s) in a.py.")],
        details={"diff": "-1 old\n+1 new"},
    )
    view.event(ToolExecutionEndEvent(tool_call_id="e", tool_name="edit", result=result,
                                     is_error=False))  # fmt: skip
    view.event(start("r", "read", {"path": "x"}))
    view.event(end("r", "read", "ENOENT", error=True))
    assert out.getvalue() == (
        "\x1b[1;36m• edit a.py\x1b[0m\n"
        "\x1b[2m  Successfully replaced 1 block(s) in a.py.\x1b[0m\n"
        "\x1b[31m  -1 old\x1b[0m\n"
        "\x1b[32m  +1 new\x1b[0m\n"
        "\x1b[1;36m• read x\x1b[0m\n"
        "\x1b[31m  ENOENT\x1b[0m\n"
    )


def test_call_summary_and_closing_line() -> None:
    assert call_summary("bash", {"command": "ls -l"}, BUILTINS["bash"]) == "bash $ ls -l"
    assert call_summary("write", {"path": "a", "content": "x"}, BUILTINS["write"]) == "write a"
    assert call_summary("bash", {"command": "ls -l"}) == 'bash {"command":"ls -l"}'
    assert call_summary("grep", {"pattern": "é"}) == 'grep {"pattern":"é"}'
    assert call_summary("x", None) == "x"
    assert closing_line(1, 1, 1, 0.04) == "1 turn, 1 tool call, 1 error, 0.0s"
    assert closing_line(0, 2, 0, 12.35) == "0 turns, 2 tool calls, 0 errors, 12.3s"


def test_a_tools_render_call_names_its_header_and_a_failing_one_falls_back() -> None:
    """``ToolDefinition.render_call`` is what ``pi run`` shows when a call starts; a renderer
    that raises or returns nothing gives the generic summary instead."""

    def broken(args: object) -> str:
        raise RuntimeError("renderer bug")

    async def execute(tool_call_id: str, params: object, on_update: object = None) -> object:
        raise AssertionError("not called")

    def stub(name: str, render_call: object) -> AgentTool:
        return AgentTool(name, "", {}, execute, render_call=render_call)  # type: ignore[arg-type]

    out = io.StringIO()
    view = RunView(
        out,
        tools=[
            stub("read", lambda args: f"read {args['path']}"),
            stub("grep", broken),
            stub("ls", lambda a: ""),
        ],
    )
    for index, (name, args) in enumerate(
        [("read", {"path": "a.txt"}), ("grep", {"pattern": "x"}), ("ls", {})]
    ):
        view.event(ToolExecutionStartEvent(tool_call_id=f"t{index}", tool_name=name, args=args))
    assert out.getvalue() == '• read a.txt\n• grep {"pattern":"x"}\n• ls {}\n'
