"""P1's floor: the least a trio + pydantic program does for 1,000 reads of small files, each
result a pydantic model printed as one JSON line: no pipeline, no hooks, no events, no
worker-thread hop (``docs/explanation/performance.md``).

Usage::

    python tests/benchmarks/p1_floor.py FOLDER   # the folder of P1's 1,000 files
"""

from __future__ import annotations

import os
import sys

import pluggy  # noqa: F401  (imported as pi imports it: part of the floor)
import pydantic
import trio


class Text(pydantic.BaseModel):
    type: str = "text"
    text: str


class ToolResult(pydantic.BaseModel):
    role: str = "toolResult"
    toolCallId: str
    toolName: str
    content: list[Text]
    isError: bool = False


async def main(folder: str) -> None:
    out = sys.stdout
    for i, name in enumerate(sorted(os.listdir(folder))):
        with open(os.path.join(folder, name), "rb") as f:  # noqa: ASYNC230  (no hop: the floor)
            text = f.read().decode()
        result = ToolResult(toolCallId=f"c{i}", toolName="read", content=[Text(text=text)])
        out.write(result.model_dump_json() + "\n")


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
