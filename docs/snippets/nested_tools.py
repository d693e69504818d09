"""A tool that calls other tools: ``word_stats`` counts the words of files through ``read``,
``largest_file`` calls ``word_stats`` for each path (docs/how-to/call-a-tool-from-a-tool.md)."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from pi_core import current_tool_context, hookimpl, tool


class WordStats(TypedDict):
    path: str
    words: int


@tool(replay="safe")
async def word_stats(path: str) -> WordStats:
    """Count the words of a text file.

    Args:
        path: the file, relative to the working directory
    """
    outcome = await current_tool_context().execute_tool("read", {"path": path})
    if outcome.is_error:
        raise ValueError(f"cannot count {path}: {outcome.result.text}")
    # read's structured content is the file's text (continuation notices aside)
    return {"path": path, "words": len(str(outcome.result.structured_content).split())}


@tool(replay="safe")
async def largest_file(paths: list[str]) -> str:
    """Name the file with the most words.

    Args:
        paths: the files to compare
    """
    ctx = current_tool_context()
    ranked: list[tuple[int, str]] = []
    for path in paths:
        outcome = await ctx.execute_tool("word_stats", {"path": path})
        if not outcome.is_error:  # a failed call comes back as an error result, never raises
            stats = outcome.result.structured_content
            ranked.append((stats["words"], path))
    if not ranked:
        return "no readable file"
    words, path = max(ranked)
    return f"{path} ({words} words)"


@hookimpl
def pi_register_tools(register: Any) -> None:
    register(word_stats)
    register(largest_file)
