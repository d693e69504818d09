"""A model-provider plugin: ``--model shout:ANY``.

Its "model" lists the working directory with the ``ls`` tool, then answers with the prompt in
capitals followed by the listing.
"""

from __future__ import annotations

from pi_core import AssistantMessage, TextContent, ToolCall, hookimpl
from pi_core.providers import StreamDone, StreamStart


def _text(content):
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if block.type == "text")


class ShoutProvider:
    async def stream(self, request, abort):
        last = request.messages[-1]
        if last.role == "user":
            message = AssistantMessage(
                content=[ToolCall(id="call-1", name="ls", arguments={})], stop_reason="toolUse"
            )
        else:
            prompt = next(m for m in request.messages if m.role == "user")
            answer = f"{_text(prompt.content).upper()}\n{_text(last.content)}"
            message = AssistantMessage(content=[TextContent(text=answer)], stop_reason="stop")
        yield StreamStart(partial=AssistantMessage(content=[], stop_reason=message.stop_reason))
        yield StreamDone(reason=message.stop_reason, message=message)


class ShoutFactory:
    name = "shout"

    def create(self, model, options):
        return ShoutProvider()


@hookimpl
def pi_register_providers(register):
    register(ShoutFactory())
