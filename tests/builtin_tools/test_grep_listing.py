"""grep's result is built line by line, holding only what the 50KB cut keeps
(:class:`pi_builtin_tools.search.output.BoundedListing`); the text and details are those of
joining every line and cutting it (:func:`pi_builtin_tools.search.output.finish_listing`)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.truncate import truncate_head
from pi_builtin_tools.search.grep import create_grep_tool_definition
from pi_builtin_tools.search.output import NO_LINE_LIMIT, BoundedListing, finish_listing

NOTICE_LONG = "Some lines truncated to 500 chars. Use read tool to see full lines"


async def grep(cwd: Path, **params: Any) -> tuple[str, Any]:
    tool = create_grep_tool_definition(str(cwd), LocalFileOperations())
    result = await tool.execute("c1", params, None, None)
    return result.content[0].text, result.details  # type: ignore[union-attr]


def expected(
    lines: list[str], notice: str | None, limit: int | None, long: bool
) -> tuple[str, Any]:
    """Pi's rule: the lines joined by ``\\n``, cut to 50KB by whole lines, then the notices."""
    truncation = truncate_head("\n".join(lines), max_lines=NO_LINE_LIMIT)
    notices: list[str] = []
    details: dict[str, Any] = {}
    if notice is not None:
        notices.append(notice)
        details["matchLimitReached"] = limit
    if truncation.truncated:
        notices.append("50.0KB limit reached")
        details["truncation"] = truncation.to_details()
    if long:
        notices.append(NOTICE_LONG)
        details["linesTruncated"] = True
    text = truncation.content + ("\n\n[" + ". ".join(notices) + "]" if notices else "")
    return text, details or None


def write_hits(path: Path, count: int, long_at: int | None = None) -> None:
    """Line ``i`` is ``a`` when odd, ``b`` when even; line ``long_at`` is 600 ``a``."""
    path.write_text(
        "".join(
            ("a" * 600 if i == long_at else "a" if i % 2 else "b") + "\n"
            for i in range(1, count + 1)
        )
    )


LIMIT_NOTICE = "5000 matches limit reached. Use limit=10000 for more, or refine pattern"


async def test_limit_5000_of_20000_matches_without_context(tmp_path: Path):
    """All 5,000 lines fit in 50KB: shown whole, with the limit notice."""
    write_hits(tmp_path / "f", 40_000)
    lines = [f"f:{i}: a" for i in range(1, 10_000, 2)]
    assert len(lines) == 5000
    result = await grep(tmp_path, pattern="a", path="f", limit=5000)
    assert result == expected(lines, LIMIT_NOTICE, 5000, False)
    assert result[0].endswith("f:9997: a\nf:9999: a\n\n[" + LIMIT_NOTICE + "]")
    assert result[1] == {"matchLimitReached": 5000}


async def test_limit_5000_of_20000_matches_with_context(tmp_path: Path):
    """The windows merge into lines 1 to 10,001; line 10,001 is the 5,001st match, shown as
    context; the text passes 50KB and is cut."""
    write_hits(tmp_path / "f", 40_000)
    lines = [f"f{':' if i % 2 else '-'}{i}{':' if i % 2 else '-'} " for i in range(1, 10_002)]
    lines = [line + ("a" if i % 2 else "b") for i, line in enumerate(lines, 1)]
    lines[-1] = "f-10001- a"
    result = await grep(tmp_path, pattern="a", path="f", limit=5000, context=2)
    assert result == expected(lines, LIMIT_NOTICE, 5000, False)
    assert result[1]["truncation"]["totalLines"] == 10_001
    assert result[1]["truncation"]["totalBytes"] == len("\n".join(lines))
    assert result[0].endswith("\n\n[" + LIMIT_NOTICE + ". 50.0KB limit reached]")


@pytest.mark.parametrize("context", [None, 1])
async def test_a_long_line_past_the_cut_still_gives_its_notice(tmp_path: Path, context: Any):
    """Line 39,999 (600 characters) lies far past 50KB: not shown, but counted, so the
    long-line notice and the totals are the same as when every line was kept."""
    write_hits(tmp_path / "f", 40_000, long_at=39_999)
    params: dict[str, Any] = {"pattern": "a", "path": "f", "limit": 20_000}
    long = "a" * 500 + "... [truncated]"
    if context is None:
        lines = [f"f:{i}: {long if i == 39_999 else 'a'}" for i in range(1, 40_000, 2)]
    else:
        params["context"] = context
        lines = [
            f"f:{i}: {long if i == 39_999 else 'a'}" if i % 2 else f"f-{i}- b"
            for i in range(1, 40_001)
        ]
    result = await grep(tmp_path, **params)
    assert result == expected(lines, None, None, True)
    assert result[0].endswith("\n\n[50.0KB limit reached. " + NOTICE_LONG + "]")


def test_bounded_listing_gives_what_finish_listing_gives():
    """Random lines (some holding ``\\n``, empty, multi-byte, over 50KB alone) added one by
    one give the same result as all of them joined."""
    rng = random.Random(7)
    pieces = ["", "a", "é", "\n", "x" * 300, "\U0001f600" * 50, "y" * 60_000]
    for _ in range(400):
        lines = [
            "".join(rng.choice(pieces) for _ in range(rng.randrange(4)))
            for _ in range(rng.randrange(1, 400))
        ]
        listing = BoundedListing()
        for line in lines:
            listing.add(line)
        notice = rng.choice([None, "N"])
        got = listing.finish(limit_notice=notice, limit_details={"k": 1})
        want = finish_listing(lines, limit_notice=notice, limit_details={"k": 1})
        assert (got.content, got.details) == (want.content, want.details), lines
        assert sum(len(kept) + 1 for kept in listing.kept[:-1]) <= 51_201  # only what can show
