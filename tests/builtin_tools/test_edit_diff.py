"""The edit engine: matching, fuzzy fallback, applying, display diff and patch (spec §7.3.1).

Expected diffs and patches were produced by Pi's own ``generateDiffString`` and jsdiff 8's
``createTwoFilesPatch`` on the same inputs.
"""

from __future__ import annotations

import pytest

from pi_builtin_tools.files.edit_diff import (
    EditError,
    FuzzyView,
    LineEndingView,
    apply_edits,
    count_occurrences,
    diff_lines,
    find_closest_match_context,
    generate_diff_string,
    generate_unified_patch,
    js_trim,
    js_trim_end,
    line_ending_at,
    normalize_for_fuzzy_match,
    normalize_to_lf,
    tokenize_lines,
)


def edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new} for old, new in pairs]


def apply_error(original: str, *pairs: tuple[str, str], path: str = "f.txt") -> str:
    with pytest.raises(EditError) as caught:
        apply_edits(original, edits(*pairs), path)
    return str(caught.value)


# ---------------------------------------------------------------------------------------------
# Line endings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "offset", "ending"),
    [
        ("a\r\nb\n", 0, "\r\n"),
        ("a\r\nb\n", 3, "\n"),  # the line's own ending, not the file's first
        ("a\nb\r\n", 2, "\r\n"),
        ("a\rb\nc\r\n", 0, "\n"),  # a lone CR in a file with LF is no line ending
        ("a\r\nb", 3, "\r\n"),  # unterminated last line: the line before's ending
        ("a\rb\r", 2, "\r"),  # no LF at all: classic Mac line endings
        ("no newline", 3, "\n"),
        ("\nx", 1, "\n"),  # the LF found before the offset is at index 0
        ("", 0, "\n"),
    ],
)
def test_line_ending_at_is_the_ending_of_the_line_holding_the_offset(
    text: str, offset: int, ending: str
) -> None:
    assert line_ending_at(text, offset) == ending


def test_normalize_to_lf_turns_crlf_and_lone_cr_into_lf() -> None:
    assert normalize_to_lf("a\r\nb\rc\n\r\r\n") == "a\nb\nc\n\n\n"


def test_line_ending_view_maps_every_position_back() -> None:
    original = "a\r\nbb\nc\rd\r\n\r\n"
    view = LineEndingView.of(original)
    assert view.text == "a\nbb\nc\nd\n\n"
    expected = [0, 1, 3, 4, 5, 6, 7, 8, 9, 11, 13]
    assert [view.to_original(i) for i in range(len(view.text) + 1)] == expected


# ---------------------------------------------------------------------------------------------
# Fuzzy normalisation
# ---------------------------------------------------------------------------------------------


def test_normalize_for_fuzzy_match_steps() -> None:
    assert normalize_for_fuzzy_match("‘a’ ‚b‛ “c” „d‟") == "'a' 'b' \"c\" \"d\""
    assert normalize_for_fuzzy_match("1\u20102\u20113\u20124\u20135\u20146\u20157\u22128") == (
        "1-2-3-4-5-6-7-8"
    )
    assert (
        normalize_for_fuzzy_match("a\u00a0b\u2002c\u200ad\u202fe\u205ff\u3000g") == "a b c d e f g"
    )
    assert normalize_for_fuzzy_match("ＡＢＣ１２３，（）") == "ABC123,()"
    assert normalize_for_fuzzy_match("cafe\u0301") == "café"
    assert normalize_for_fuzzy_match("x  \t\ny\u00a0\u3000\nz") == "x\ny\nz"


def test_trailing_whitespace_uses_javascripts_set() -> None:
    # U+001C..U+001F and U+0085 are whitespace to Python's rstrip, not to JavaScript's trimEnd.
    assert js_trim_end("a\x1c\x1d\x1e\x1f\x85") == "a\x1c\x1d\x1e\x1f\x85"
    assert js_trim_end("a \t\u2028\u2029\ufeff") == "a"
    assert js_trim("\ufeff x \u3000") == "x"
    assert normalize_for_fuzzy_match("a\x1f\nb\x85") == "a\x1f\nb\x85"


def test_fuzzy_view_maps_positions_to_whole_source_clusters() -> None:
    view = FuzzyView.of("ﬁle  \nca\u0301fe\u00a0x")
    assert view.text == "file\ncáfe x"
    # "i" comes from the ligature "ﬁ": its cluster is source [0, 1), fuzzy [0, 2)
    assert view.locate(1, end=False) == (0, 0)
    assert view.locate(1, end=True) == (1, 2)
    # the "\n" maps to the source "\n" after the trimmed spaces
    assert view.locate(4, end=False) == (5, 4)
    assert view.locate(4, end=True) == (6, 5)
    # "á" (composed by NFKC) is the source cluster "a\u0301"
    assert view.locate(6, end=False) == (7, 6)
    assert view.locate(6, end=True) == (9, 7)
    # the no-break space became a space: one to one
    assert view.locate(9, end=False) == (11, 9)


def test_count_occurrences_counts_overlapping_ones() -> None:
    assert count_occurrences("foo\nfoo\nfoo\n", "foo\nfoo\n") == 2
    assert count_occurrences("aaaa", "aa") == 3
    assert count_occurrences("abc", "x") == 0


# ---------------------------------------------------------------------------------------------
# apply_edits
# ---------------------------------------------------------------------------------------------


def test_exact_edit_keeps_every_other_byte() -> None:
    applied = apply_edits("a\r\nb\nc\rd\n", edits(("b", "B")), "m.txt")
    assert applied.new_text == "a\r\nB\nc\rd\n"
    assert applied.base_content == "a\nb\nc\nd\n"
    assert applied.new_content == "a\nB\nc\nd\n"


def test_replacement_line_breaks_take_the_ending_of_the_replaced_line() -> None:
    # Pi 1.6's applyReplacementsToOriginal: the line where the replaced range starts decides
    applied = apply_edits("x\r\ny\nz\n", edits(("y\n", "1\n2\n")), "m.txt")
    assert applied.new_text == "x\r\n1\n2\nz\n"
    applied = apply_edits("x\ny\r\n", edits(("y", "1\r\n2")), "m.txt")
    assert applied.new_text == "x\n1\r\n2\r\n"
    applied = apply_edits("one\rtwo\rthree\r", edits(("two", "two\nmore")), "c.txt")
    assert applied.new_text == "one\rtwo\rmore\rthree\r"
    assert applied.new_content == "one\ntwo\nmore\nthree\n"


def test_lone_cr_in_new_text_is_a_line_break() -> None:
    applied = apply_edits("log: 10%\n50%\n", edits(("50%", "60%\r70%")), "p.txt")
    assert applied.new_text == "log: 10%\n60%\n70%\n"


def test_kept_cr_never_merges_with_an_inserted_lf() -> None:
    # "x\r" is kept; the new text starts with a line break: it must not make "x\r\n" one break
    applied = apply_edits("x\ry\n", edits(("y", "\nz")), "s.txt")
    assert applied.new_text == "x\r\n\nz\n"
    assert applied.new_content == "x\n\nz\n"
    # deleting what stood between a kept CR and a kept LF
    applied = apply_edits("a\rb\nc", edits(("b", "")), "s.txt")
    assert applied.new_text == "a\r\n\nc"


def test_match_across_crlf_and_lone_cr() -> None:
    applied = apply_edits("a\r\nb\rc\r\nd", edits(("a\nb\nc", "X")), "p.txt")
    assert applied.new_text == "X\r\nd"


def test_fuzzy_edit_rewrites_only_what_it_matched() -> None:
    original = "x = ‘a’; y = “b”  \nkeep “this”  \n"
    applied = apply_edits(original, edits(("x = 'a';", "x = 1;")), "q.js")
    assert applied.new_text == "x = 1; y = “b”  \nkeep “this”  \n"
    assert applied.replacements[0].fuzzy is True


def test_fuzzy_match_through_trailing_whitespace_replaces_it() -> None:
    applied = apply_edits("one   \ntwo  \nthree\n", edits(("one\ntwo\n", "1\n")), "w.txt")
    assert applied.new_text == "1\nthree\n"


def test_fuzzy_match_inside_an_nfkc_cluster_keeps_the_rest_of_it() -> None:
    applied = apply_edits("ﬁle\n", edits(("ile", "ILE")), "l.txt")
    assert applied.new_text == "fILE\n"


def test_exact_and_fuzzy_edits_mix_in_one_call() -> None:
    original = "const a = 'x';\nconst b = ‘y’;\n"
    applied = apply_edits(original, edits(("const a = 'x';", "A"), ("const b = 'y';", "B")), "t.js")
    assert applied.new_text == "A\nB\n"
    assert [r.fuzzy for r in applied.replacements] == [False, True]


def test_uniqueness_is_counted_where_the_match_was_found() -> None:
    # an exact match counts exact occurrences: the curly twin does not make it ambiguous
    applied = apply_edits("x = 'a'\nx = ‘a’\n", edits(("x = 'a'", "B")), "u.txt")
    assert applied.new_text == "B\nx = ‘a’\n"
    # a fuzzy match counts fuzzy occurrences
    assert apply_error("x = ‘a’\nx = “a”\nx = ’a‘\n", ("x = 'a'", "B")) == (
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more "
        "context to make it unique."
    )


def test_oldtext_that_is_blank_after_normalisation_is_not_found_anywhere() -> None:
    assert apply_error("a\nb\n", ("   ", "x")).startswith("Could not find the exact text in f.txt.")


def test_errors_are_checked_in_pis_order() -> None:
    # every empty oldText is reported before any match is tried
    assert apply_error("a\n", ("missing", "x"), ("", "y")) == (
        "edits[1].oldText must not be empty in f.txt."
    )
    assert apply_error("a a\nb\n", ("a", "x"), ("missing", "y")) == (
        "Found 2 occurrences of edits[0] in f.txt. Each oldText must be unique. Please provide "
        "more context to make it unique."
    )


def test_overlap_names_edits_in_file_order() -> None:
    assert apply_error("one\ntwo\nthree\n", ("two\nthree\n", "x"), ("one\ntwo\n", "y")) == (
        "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint "
        "regions."
    )


def test_touching_edits_do_not_overlap() -> None:
    applied = apply_edits("ab", edits(("b", "B"), ("a", "A")), "t.txt")
    assert applied.new_text == "AB"


def test_crlf_only_difference_is_no_change() -> None:
    assert apply_error("x\r\na\nb\n", ("a\nb", "a\nb")) == (
        "No changes made to f.txt. The replacement produced identical content. This might "
        "indicate an issue with special characters or the text not existing as expected."
    )


# ---------------------------------------------------------------------------------------------
# Closest-match context (upstream Pi, spec §10 row 20)
# ---------------------------------------------------------------------------------------------


def test_closest_match_window() -> None:
    content = "\n".join(f"line {i}" for i in range(1, 21))
    # 15 characters: only the whole first line is tried (then 5 < 10): no match
    assert find_closest_match_context(content, "line 10 changed\nmore") == (
        "File starts with:\n  1: line 1\n  2: line 2\n  3: line 3\n  4: line 4\n  5: line 5"
    )
    context = "alpha\nbeta\n    def compute_total(items): pass\ngamma\ndelta\nepsilon\nzeta\n"
    assert find_closest_match_context(context, "def compute_total(items):\n  x") == (
        "Closest match is around line 3:\n  1: alpha\n  2: beta\n"
        "  3:     def compute_total(items): pass\n  4: gamma\n  5: delta\n  6: epsilon\n"
        "  7: zeta"
    )


def test_closest_match_tries_shorter_prefixes() -> None:
    content = "x\ny\nprint('hello world', end='')\n"
    # 20 characters: the whole line is not found, its 10-character prefix "print('hel" is
    assert find_closest_match_context(content, "print('hello there')") == (
        "Closest match is around line 3:\n  1: x\n  2: y\n  3: print('hello world', end='')\n  4: "
    )


def test_closest_match_short_or_blank_first_line() -> None:
    assert (
        find_closest_match_context("a\nb\n", "short") == "File starts with:\n  1: a\n  2: b\n  3: "
    )
    assert find_closest_match_context("a\nb\n", "   \nwhatever") is None


def test_closest_match_counts_utf16_units() -> None:
    # 😀 is two UTF-16 units: ten of them and "x" are 21 units, so an 11-unit prefix (five
    # emoji and half of the sixth) is tried, and found in a line of six emoji
    content = "zzz\n" + "😀" * 6 + "y\n"
    assert find_closest_match_context(content, "😀" * 10 + "x") == (
        "Closest match is around line 2:\n  1: zzz\n  2: " + "😀" * 6 + "y\n  3: "
    )
    # counted in code points, the first line would be 11 long and never shortened
    assert find_closest_match_context(content, "😀" * 9 + "x") == (
        "File starts with:\n  1: zzz\n  2: " + "😀" * 6 + "y\n  3: "
    )


def test_not_found_error_carries_the_context() -> None:
    assert apply_error("alpha\nbeta\ngamma\ndelta\n", ("nonexistent", "x")) == (
        "Could not find the exact text in f.txt. The old text must match exactly including all "
        "whitespace and newlines.\nFile starts with:\n  1: alpha\n  2: beta\n  3: gamma\n"
        "  4: delta\n  5: "
    )
    assert apply_error("", ("nonexistent", "x")) == (
        "Could not find the exact text in f.txt. The old text must match exactly including all "
        "whitespace and newlines."
    )
    assert apply_error("abc\n", ("  \nnope", "x")) == (
        "Could not find the exact text in f.txt. The old text must match exactly including all "
        "whitespace and newlines.\nFile is empty."
    )


# ---------------------------------------------------------------------------------------------
# jsdiff port
# ---------------------------------------------------------------------------------------------


def test_tokenize_lines_keeps_crlf_and_lone_cr() -> None:
    assert tokenize_lines("a\r\nb\rc\nd") == ["a\r\n", "b\rc\n", "d"]
    assert tokenize_lines("") == []
    assert tokenize_lines("\n\n") == ["\n", "\n"]


def test_diff_lines_prefers_jsdiffs_alignment() -> None:
    parts = diff_lines("foo\nfoo\nfoo\n", "bar\nfoo\n")
    assert [(p.added, p.removed, p.value) for p in parts] == [
        (True, False, "bar\n"),
        (False, False, "foo\n"),
        (False, True, "foo\nfoo\n"),
    ]


DIFF_CASES = [
    ("Hello, world!", "Hello, testing!", "-1 Hello, world!\n+1 Hello, testing!", 1),
    ("foo\nfoo\nfoo\n", "bar\nfoo\n", "+1 bar\n 1 foo\n-2 foo\n-3 foo", 1),
    (
        "alpha\nbeta\ngamma\ndelta\n",
        "ALPHA\nbeta\nGAMMA\ndelta\n",
        "-1 alpha\n+1 ALPHA\n 2 beta\n-3 gamma\n+3 GAMMA\n 4 delta",
        1,
    ),
    ("a\nb\nc\n", "a\nb\nc", " 1 a\n 2 b\n-3 c\n+3 c", 3),
    ("", "x\n", "+1 x", 1),
    ("x\n", "", "-1 x", 1),
    (
        "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n",
        "a\nb\nc\nd\ne\nF\nF2\ng\nh\ni\nj\nk\nl\n",
        "    ...\n  2 b\n  3 c\n  4 d\n  5 e\n- 6 f\n+ 6 F\n+ 7 F2\n  7 g\n  8 h\n  9 i\n 10 j\n"
        "    ...",
        6,
    ),
    (
        "".join(f"{i}\n" for i in range(1, 21)),
        "".join(f"{ {3: 'TWO', 19: 'NINETEEN'}.get(i, i) }\n" for i in range(1, 21)),
        "  1 1\n  2 2\n- 3 3\n+ 3 TWO\n  4 4\n  5 5\n  6 6\n  7 7\n    ...\n 15 15\n 16 16\n"
        " 17 17\n 18 18\n-19 19\n+19 NINETEEN\n 20 20",
        3,
    ),
    (
        "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
        "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\n",
        "  1 a\n- 2 b\n+ 2 B\n  3 c\n  4 d\n  5 e\n  6 f\n  7 g\n  8 h\n  9 i\n-10 j\n+10 J",
        2,
    ),
]


@pytest.mark.parametrize(("old", "new", "diff", "first"), DIFF_CASES)
def test_generate_diff_string_matches_pi(old: str, new: str, diff: str, first: int) -> None:
    result = generate_diff_string(old, new)
    assert (result.diff, result.first_changed_line) == (diff, first)


def test_identical_content_has_no_first_changed_line() -> None:
    assert generate_diff_string("a\n", "a\n").first_changed_line is None


PATCH_CASES = [
    (
        "Hello, world!",
        "Hello, testing!",
        "--- f.txt\n+++ f.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n"
        "+Hello, testing!\n\\ No newline at end of file\n",
    ),
    (
        "foo\nfoo\nfoo\n",
        "bar\nfoo\n",
        "--- f.txt\n+++ f.txt\n@@ -1,3 +1,2 @@\n+bar\n foo\n-foo\n-foo\n",
    ),
    (
        "a\nb\nc\n",
        "a\nb\nc",
        "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n a\n b\n-c\n+c\n\\ No newline at end of file\n",
    ),
    ("", "x\n", "--- f.txt\n+++ f.txt\n@@ -0,0 +1,1 @@\n+x\n"),
    ("x\n", "", "--- f.txt\n+++ f.txt\n@@ -1,1 +0,0 @@\n-x\n"),
    (
        "".join(f"{i}\n" for i in range(1, 21)),
        "".join(f"{ {3: 'TWO', 19: 'NINETEEN'}.get(i, i) }\n" for i in range(1, 21)),
        "--- f.txt\n+++ f.txt\n@@ -1,7 +1,7 @@\n 1\n 2\n-3\n+TWO\n 4\n 5\n 6\n 7\n"
        "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n 18\n-19\n+NINETEEN\n 20\n",
    ),
    (
        "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
        "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\n",
        "--- f.txt\n+++ f.txt\n@@ -1,10 +1,10 @@\n a\n-b\n+B\n c\n d\n e\n f\n g\n h\n i\n-j\n+J\n",
    ),
    (
        "first\r\nsecond\r\n",
        "first\r\nSECOND\r\n",
        "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n first\r\n-second\r\n+SECOND\r\n",
    ),
]


@pytest.mark.parametrize(("old", "new", "patch"), PATCH_CASES)
def test_generate_unified_patch_matches_jsdiff(old: str, new: str, patch: str) -> None:
    assert generate_unified_patch("f.txt", old, new) == patch


def test_random_edits_keep_every_byte_outside_the_match() -> None:
    """Property check over mixed line endings: the bytes before and after the matched span are
    kept, the new text's line breaks take the ending of the line the span starts on, the LF
    view of the written text is the reported new content, and the patch (of the LF views)
    turns the old content into the new."""
    import random

    rng = random.Random(20260)
    pieces = ["ab", "cd", "é", "\r\n", "\n", "\r", "  ", "x‘y’", "\t"]
    for _ in range(300):
        original = "".join(rng.choice(pieces) for _ in range(rng.randint(3, 30)))
        view = LineEndingView.of(original)
        start = rng.randrange(len(view.text))
        end = rng.randint(start + 1, len(view.text))
        old = view.text[start:end]
        if count_occurrences(view.text, old) != 1:
            continue
        new = rng.choice(["", "Z", "P\nQ", "R\r\nS\n", "T\rU", "\nV"])
        try:
            applied = apply_edits(original, edits((old, new)), "r.txt")
        except EditError as exc:
            assert str(exc).startswith("No changes made")
            continue
        o_start, o_end = view.to_original(start), view.to_original(end)
        assert applied.new_text.startswith(original[:o_start])
        assert applied.new_text.endswith(original[o_end:])
        middle = applied.new_text[o_start : len(applied.new_text) - (len(original) - o_end)]
        written = normalize_to_lf(new).replace("\n", line_ending_at(original, o_start))
        seam = original[o_start - 1 : o_start] == "\r" and written.startswith("\n")
        if not written and original[o_start - 1 : o_start] == "\r":
            seam = original[o_end : o_end + 1] == "\n"
        assert middle == ("\n" if seam else "") + written
        expected_content = view.text[:start] + normalize_to_lf(new) + view.text[end:]
        assert applied.new_content == expected_content
        assert normalize_to_lf(applied.new_text) == applied.new_content
        patch = generate_unified_patch("r.txt", view.text, applied.new_content)
        assert _apply_patch(view.text, patch) == applied.new_content


def _apply_patch(old: str, patch: str) -> str:
    """A minimal unified-patch applier (context checked) for the property test."""
    old_lines = tokenize_lines(old)
    out: list[str] = []
    pos = 0
    lines = patch.split("\n")[2:-1]
    i = 0
    while i < len(lines):
        header = lines[i]
        assert header.startswith("@@ -")
        old_start = int(header[4:].split(",")[0])
        old_count = int(header.split(" ")[1].split(",")[1])
        hunk_start = old_start - 1 if old_count else old_start
        out.extend(old_lines[pos:hunk_start])
        pos = hunk_start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            eol = "" if i + 1 < len(lines) and lines[i + 1].startswith("\\") else "\n"
            if line[0] in " -":
                assert old_lines[pos] == line[1:] + eol
                pos += 1
            if line[0] in " +":
                out.append(line[1:] + eol)
            i += 2 if not eol else 1
    out.extend(old_lines[pos:])
    return "".join(out)
