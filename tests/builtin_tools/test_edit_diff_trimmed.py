"""The trimmed line diff (:func:`line_diff`, :func:`line_diff_of_region`) gives byte for byte
the texts of the untrimmed one: the reference below is the whole-text jsdiff port
(:func:`diff_lines` over every line) with the formatters as they were before trimming."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_builtin_tools.files.edit_diff import (
    DiffTooLarge,
    apply_edits,
    common_prefix_length,
    common_suffix_length,
    diff_lines,
    format_diff_string,
    format_unified_patch,
    generate_diff_string,
    generate_unified_patch,
    line_diff_of_region,
)

# -- the untrimmed reference -----------------------------------------------------------------


def _split_part_lines(value: str) -> list[str]:
    raw = value.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    return raw


def reference_diff_string(old: str, new: str, context_lines: int = 4) -> tuple[str, int | None]:
    parts = diff_lines(old, new)
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    skipped_marker = f" {'':>{width}} ..."
    out: list[str] = []
    old_no = new_no = 1
    last_was_change = False
    first_changed: int | None = None

    def context(line: str) -> None:
        nonlocal old_no, new_no
        out.append(f" {old_no:>{width}} {line}")
        old_no += 1
        new_no += 1

    for i, part in enumerate(parts):
        raw = _split_part_lines(part.value)
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_no
            for line in raw:
                if part.added:
                    out.append(f"+{new_no:>{width}} {line}")
                    new_no += 1
                else:
                    out.append(f"-{old_no:>{width}} {line}")
                    old_no += 1
            last_was_change = True
            continue
        next_is_change = i < len(parts) - 1 and (parts[i + 1].added or parts[i + 1].removed)
        if last_was_change and next_is_change:
            if len(raw) <= context_lines * 2:
                for line in raw:
                    context(line)
            else:
                leading = raw[:context_lines]
                trailing = raw[len(raw) - context_lines :]
                skipped = len(raw) - len(leading) - len(trailing)
                for line in leading:
                    context(line)
                out.append(skipped_marker)
                old_no += skipped
                new_no += skipped
                for line in trailing:
                    context(line)
        elif last_was_change:
            shown = raw[:context_lines]
            skipped = len(raw) - len(shown)
            for line in shown:
                context(line)
            if skipped > 0:
                out.append(skipped_marker)
                old_no += skipped
                new_no += skipped
        elif next_is_change:
            skipped = max(0, len(raw) - context_lines)
            if skipped > 0:
                out.append(skipped_marker)
                old_no += skipped
                new_no += skipped
            for line in raw[skipped:]:
                context(line)
        else:
            old_no += len(raw)
            new_no += len(raw)
        last_was_change = False
    return "\n".join(out), first_changed


def _patch_split_lines(text: str) -> list[str]:
    result = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        result.pop()
    else:
        result[-1] = result[-1][:-1]
    return result


def reference_patch(path: str, old: str, new: str, context_lines: int = 4) -> str:
    parts = diff_lines(old, new)
    entries = [(p.added, p.removed, _patch_split_lines(p.value)) for p in parts]
    entries.append((False, False, []))
    hunks: list[tuple[int, int, int, int, list[str]]] = []
    old_range_start = new_range_start = 0
    cur: list[str] = []
    old_line = new_line = 1
    for i, (added, removed, lines) in enumerate(entries):
        if added or removed:
            if not old_range_start:
                old_range_start, new_range_start = old_line, new_line
                if i > 0:
                    prev_lines = entries[i - 1][2]
                    cur = [" " + line for line in prev_lines[-context_lines:]]
                    old_range_start -= len(cur)
                    new_range_start -= len(cur)
            cur.extend(("+" if added else "-") + line for line in lines)
            if added:
                new_line += len(lines)
            else:
                old_line += len(lines)
            continue
        if old_range_start:
            if len(lines) <= context_lines * 2 and i < len(entries) - 2:
                cur.extend(" " + line for line in lines)
            else:
                size = min(len(lines), context_lines)
                cur.extend(" " + line for line in lines[:size])
                hunks.append(
                    (
                        old_range_start,
                        old_line - old_range_start + size,
                        new_range_start,
                        new_line - new_range_start + size,
                        cur,
                    )
                )
                old_range_start = new_range_start = 0
                cur = []
        old_line += len(lines)
        new_line += len(lines)
    out = [f"--- {path}", f"+++ {path}"]
    for old_start, old_count, new_start, new_count, hunk_lines in hunks:
        if old_count == 0:
            old_start -= 1
        if new_count == 0:
            new_start -= 1
        out.append(f"@@ -{old_start},{old_count} +{new_start},{new_count} @@")
        for line in hunk_lines:
            if line.endswith("\n"):
                out.append(line[:-1])
            else:
                out.append(line)
                out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n"


def assert_same_texts(old: str, new: str) -> None:
    display = generate_diff_string(old, new)
    assert (display.diff, display.first_changed_line) == reference_diff_string(old, new)
    assert generate_unified_patch("f.txt", old, new) == reference_patch("f.txt", old, new)


# -- texts made of few distinct lines, so that the diff has ties to break ---------------------

LINES = ["a\n", "b\n", "a\n", "\n", "c\r\n", "a", "b", "\ufeffa\n", "é\n", "x\ry\n"]
lines_st = st.lists(st.sampled_from(LINES), max_size=30).map(
    lambda ls: "".join(
        line if line.endswith("\n") or i == len(ls) - 1 else line + "\n"
        for i, line in enumerate(ls)
    )
)


@settings(max_examples=1500, deadline=None)
@given(lines_st, lines_st)
def test_any_two_texts(old: str, new: str) -> None:
    assert_same_texts(old, new)


@settings(max_examples=1500, deadline=None)
@given(
    lines_st,
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4), lines_st), min_size=1, max_size=4),
)
def test_local_changes_of_a_text(old: str, changes: list[tuple[int, int, str]]) -> None:
    """Replace a few runs of lines (at the start, the end, in the middle, touching)."""
    lines = old.splitlines(keepends=True)
    for at, length, text in changes:
        at = min(at, len(lines))
        lines[at : at + length] = text.splitlines(keepends=True)
    new = "".join(lines)
    assert_same_texts(old, new)
    assert_same_texts(new, old)


def test_random_edits_of_realistic_files() -> None:
    rng = random.Random(20261201)
    words = ["alpha", "beta", "", "}", "    return x", "gamma", "{", "beta"]
    for _ in range(400):
        n = rng.randint(0, 60)
        ending = rng.choice(["\n", "\r\n"])
        lines = [rng.choice(words) for _ in range(n)]
        old = ending.join(lines) + rng.choice(["", ending])
        if rng.random() < 0.2:
            old = "\ufeff" + old
        new_lines = list(lines)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(new_lines))
            kind = rng.random()
            if kind < 0.3:
                new_lines.insert(at, rng.choice(words))
            elif kind < 0.6 and new_lines:
                del new_lines[min(at, len(new_lines) - 1)]
            elif new_lines:
                new_lines[min(at, len(new_lines) - 1)] = rng.choice(words) + "!"
        new = ending.join(new_lines) + rng.choice(["", ending])
        assert_same_texts(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        ("", "a"),
        ("a", ""),
        ("a\n", "a\na\n"),  # an added copy of the line after it: jsdiff adds the second
        ("a\nb\n", "a\nb\nb\n"),
        ("b\na\n", "c\na\na\n"),
        ("x\na\n", "x\na"),
        ("x\na", "x\na\n"),
        ("same\n" * 50, "same\n" * 51),
        ("a\n" * 20 + "b\n" + "a\n" * 20, "a\n" * 20 + "c\n" + "a\n" * 20),
    ],
)
def test_edge_cases(old: str, new: str) -> None:
    assert_same_texts(old, new)
    assert_same_texts(new, old)


def test_apply_edits_then_diff_match_the_reference_for_multi_edit_calls() -> None:
    rng = random.Random(7)
    for _ in range(200):
        lines = [f"line {i} {rng.choice('ab')}\n" for i in range(rng.randint(3, 40))]
        original = "".join(lines)
        picks = sorted(rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 3))))
        edits = [
            {"oldText": lines[k], "newText": rng.choice(["", "new\n", lines[k] + "more\n"])}
            for k in picks
        ]
        try:
            applied = apply_edits(original, edits, "f.txt")
        except Exception:
            continue
        assert_same_texts(applied.base_content, applied.new_content)


# -- the C-speed helpers and the bounded region diff -----------------------------------------


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 70_000, 300_000])
def test_common_prefix_and_suffix_lengths(n: int) -> None:
    a = "x" * n + "A" + "y" * n
    b = "x" * n + "B" + "y" * n
    assert common_prefix_length(a, b) == n
    assert common_suffix_length(a, b, len(a)) == n
    assert common_suffix_length(a, b, 3) == min(3, n)
    assert common_prefix_length(a, a) == len(a)
    assert common_prefix_length(a.encode(), b.encode(), 0, 0) == n
    assert common_prefix_length("pre" + a, b, 3, 0) == n


def test_region_diff_over_bytes_equals_the_whole_diff() -> None:
    head = "".join(f"line {i}\n" for i in range(100))
    tail = "".join(f"line {i} é\n" for i in range(100, 200))
    data = (head + "old one\nold two\n" + tail).encode()
    start, prefix_end = 0, len(head.encode())
    suffix_start = prefix_end + len(b"old one\nold two\n")
    diff = line_diff_of_region(
        data,
        start,
        prefix_end,
        "old one\nold two\n",
        "new\n",
        suffix_start,
        len(data),
        old_lines=203,
        new_lines=202,
    )
    old, new = data.decode(), head + "new\n" + tail
    display = format_diff_string(diff)
    assert (display.diff, display.first_changed_line) == reference_diff_string(old, new)
    assert format_unified_patch("f", diff) == reference_patch("f", old, new)


def test_region_diff_refuses_to_grow_past_its_limit() -> None:
    data = b"same\n" * 1000
    with pytest.raises(DiffTooLarge):
        line_diff_of_region(
            data,
            0,
            0,
            "same\n",
            "other\nsame\n",
            5,
            len(data),
            old_lines=1001,
            new_lines=1002,
            max_chars=100,
        )


@pytest.mark.parametrize(
    ("haystack", "needle", "count"),
    [
        ("aaaa", "a", 4),
        ("aaaa", "aa", 3),
        ("abababa", "aba", 3),
        ("abcabc", "abc", 2),
        ("xaxbxaxb", "xaxb", 2),
        ("aXaaXa", "aXa", 2),
        (b"aaaa", b"aa", 3),
    ],
)
def test_count_occurrences_counts_overlaps(haystack: str, needle: str, count: int) -> None:
    from pi_builtin_tools.files.edit_diff import count_occurrences

    assert count_occurrences(haystack, needle) == count


@settings(max_examples=500, deadline=None)
@given(st.text("ab", max_size=12), st.text("ab", min_size=1, max_size=4))
def test_count_occurrences_is_the_overlapping_count(haystack: str, needle: str) -> None:
    from pi_builtin_tools.files.edit_diff import count_occurrences

    expected = sum(haystack.startswith(needle, i) for i in range(len(haystack)))
    assert count_occurrences(haystack, needle) == expected


def _diff_tokens_without_shortcut(
    old: list[str], new: list[str]
) -> list[tuple[list[str], bool, bool]]:
    """The Myers search itself, with the disjoint-texts answer switched off."""
    import inspect

    from pi_builtin_tools.files import edit_diff

    source = inspect.getsource(edit_diff._diff_tokens).replace(
        "if old and new and new[0] != old[0] and set(old).isdisjoint(new):", "if False:"
    )
    assert "if False:" in source
    namespace = dict(vars(edit_diff))
    exec(source, namespace)
    return namespace["_diff_tokens"](old, new)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c", "\n", "d\n"]), max_size=8),
    st.lists(st.sampled_from(["A\n", "B\n", "C", "\n", "d\n"]), max_size=8),
)
def test_disjoint_texts_answer_is_the_searchs_answer(old: list[str], new: list[str]) -> None:
    from pi_builtin_tools.files.edit_diff import _diff_tokens

    assert _diff_tokens(old, new) == _diff_tokens_without_shortcut(old, new)


def test_a_rewritten_block_of_thousands_of_lines_diffs_at_once() -> None:
    from pi_builtin_tools.files.edit_diff import _diff_tokens

    old = [f"line {i}\n" for i in range(20_000)]
    new = [line.upper() for line in old]
    assert _diff_tokens(old, new) == [(old, False, True), (new, True, False)]
