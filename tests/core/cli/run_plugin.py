"""A plugin for the ``pi run`` tests (``pi -p run_plugin``).

* Provider ``capture:FILE``: each model call appends ``{"system_prompt", "tools", "options",
  "messages"}`` (tool names, message roles) as a JSON line to FILE, then answers with a text
  ``captured`` (``stopReason: "stop"``).
* Tool ``stubborn``: creates ``marker``, then sleeps ``seconds`` shielded from cancellation
  (a tool that ignores Ctrl-C).
"""

from __future__ import annotations

import json
from typing import Any

import trio

from pi_core import hookimpl, tool
from pi_core._providers.base import StreamDone
from pi_core._wire.messages import AssistantMessage, TextContent


class CaptureProvider:
    def __init__(self, path: str, options: dict[str, Any]) -> None:
        self.path = path
        self.options = options

    async def stream(self, request: Any, abort: Any = None) -> Any:
        record = {
            "system_prompt": request.system_prompt,
            "tools": [t.name for t in request.tools],
            "options": self.options,
            "messages": [m.role for m in request.messages],
        }
        async with await trio.open_file(self.path, "a", encoding="utf-8") as f:
            await f.write(json.dumps(record) + "\n")
        message = AssistantMessage(content=[TextContent(text="captured")], stop_reason="stop")
        yield StreamDone(reason="stop", message=message)


class CaptureFactory:
    name = "capture"

    def create(self, model: str, options: dict[str, Any]) -> CaptureProvider:
        return CaptureProvider(model, options)


@tool
async def stubborn(marker: str, seconds: float) -> str:
    """Create the file ``marker``, then sleep without letting anything cancel it."""
    await trio.Path(marker).write_text("started")
    with trio.CancelScope(shield=True):
        await trio.sleep(seconds)
    return "slept"


@hookimpl
def pi_register_providers(register: Any) -> None:
    register(CaptureFactory())


@hookimpl
def pi_register_tools(register: Any, context: Any) -> None:
    register(stubborn)
