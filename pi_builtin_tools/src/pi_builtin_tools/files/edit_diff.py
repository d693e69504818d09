"""The edit tool's text engine: matching, the fuzzy fallback, applying edits, diffs and patches.

Pi's ``edit-diff.ts``, except that untouched bytes are kept (``docs/explanation/differences.md``).
Everything here is pure: no I/O.

How an edit is applied (:func:`apply_edits`):

1. The decoded file text (BOM already removed) is viewed LF-normalised: ``\\r\\n`` and lone
   ``\\r`` become ``\\n`` (Pi's ``normalizeToLF``). :class:`LineEndingView` maps every position
   of that view back to the original text, so matches are found in the normalised view but
   replacements land on the original characters.
2. Each ``oldText`` (LF-normalised) is looked up on its own in the original content: exactly first;
   if absent, through the fuzzy normalisation (:func:`normalize_for_fuzzy_match`: NFKC, trailing
   whitespace, smart quotes, dashes, special spaces). :class:`FuzzyView` maps fuzzy positions back
   to the normalised view, so a fuzzy match rewrites only the characters it matched (widened to
   whole NFKC clusters); every other byte of the file, on the same line or elsewhere, is kept.
3. Uniqueness is counted where the match was found: exact occurrences for an exact match, fuzzy
   occurrences for a fuzzy one, overlapping occurrences included (``foo\\nfoo\\n`` occurs twice in
   ``foo\\nfoo\\nfoo\\n``).
4. Matches may touch but not overlap; all are located in the original content, then applied
   together (all or nothing), as Pi 1.6's ``applyReplacementsToOriginal`` splices them: the
   ``newText`` is LF-normalised like ``oldText``, and its line breaks are written as the line
   ending of the line where the replaced range starts (:func:`line_ending_at`); a kept lone
   ``\\r`` that would meet an ``\\n`` after it gets an ``\\n`` of its own, so the file has the
   line breaks the diff shows. Text outside the replaced ranges keeps its bytes.

Texts of the errors (:class:`EditError`) are Pi's, with upstream's closest-match context block
after a failed match.

The display diff (:func:`generate_diff_string`) and the unified patch
(:func:`generate_unified_patch`) reproduce jsdiff 8 (``diffLines`` and ``createTwoFilesPatch``),
which Pi uses; :func:`diff_lines` is a port of its Myers algorithm because its tie-breaking decides
which lines a diff shows, and no Python diff library reproduces it.

Both run over :func:`line_diff`, which gives :func:`diff_lines`' parts while diffing only the
changed lines: the common leading and trailing lines are found at C speed (slice compares) and
kept as views (:class:`_TextRun`: their count and the few lines a diff shows), so one edit of a
large file costs a few lines of Python whatever the file's size (:func:`line_diff_of_region`
says why the result is the same; ``tests/builtin_tools/test_edit_diff_trimmed.py`` compares it
with the whole-text diff on random texts full of ties).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pi_core import ToolError

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class EditError(ToolError):
    """An edit that cannot be applied; the message is the exact text the model sees."""


def not_found_header(path: str, index: int, total: int) -> str:
    """Pi 1.6's not-found text: ``Could not find the exact text in P. The old text must match
    exactly including all whitespace and newlines.`` for one edit, ``Could not find edits[I] in
    P. The oldText must match ...`` for several."""
    if total == 1:
        return (
            f"Could not find the exact text in {path}. The old text must match exactly "
            "including all whitespace and newlines."
        )
    return (
        f"Could not find edits[{index}] in {path}. The oldText must match exactly including all "
        "whitespace and newlines."
    )


def _not_found_error(path: str, index: int, total: int, content: str, old_text: str) -> EditError:
    """:func:`not_found_header` and, as a later Pi adds (``docs/explanation/differences.md``),
    where the model probably meant to edit (:func:`find_closest_match_context`)."""
    context = ""
    if content and old_text:
        block = find_closest_match_context(content, old_text)
        context = "\n" + (block if block is not None else "File is empty.")
    return EditError(not_found_header(path, index, total) + context)


def _duplicate_error(path: str, index: int, total: int, occurrences: int) -> EditError:
    if total == 1:
        return EditError(
            f"Found {occurrences} occurrences of the text in {path}. The text must be unique. "
            "Please provide more context to make it unique."
        )
    return EditError(
        f"Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be "
        "unique. Please provide more context to make it unique."
    )


def _empty_old_text_error(path: str, index: int, total: int) -> EditError:
    if total == 1:
        return EditError(f"oldText must not be empty in {path}.")
    return EditError(f"edits[{index}].oldText must not be empty in {path}.")


def _no_change_error(path: str, total: int) -> EditError:
    if total == 1:
        return EditError(
            f"No changes made to {path}. The replacement produced identical content. This might "
            "indicate an issue with special characters or the text not existing as expected."
        )
    return EditError(f"No changes made to {path}. The replacements produced identical content.")


# --------------------------------------------------------------------------------------------
# JavaScript string helpers (Pi's texts depend on them)
# --------------------------------------------------------------------------------------------

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""JavaScript's ``trim``/``trimEnd`` set. Python's ``str.strip()`` also strips U+001C–U+001F and
U+0085, which JavaScript keeps."""


def js_trim_end(text: str) -> str:
    """JavaScript ``String.prototype.trimEnd``."""
    return text.rstrip(JS_WHITESPACE)


def js_trim(text: str) -> str:
    """JavaScript ``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def _to_utf16_units(text: str) -> str:
    """``text`` with every astral character written as its two surrogate code units, so that
    ``len``, slicing and ``in`` behave like JavaScript's (UTF-16) string operations."""
    if all(ord(c) < 0x10000 for c in text):
        return text
    out: list[str] = []
    for c in text:
        cp = ord(c)
        if cp < 0x10000:
            out.append(c)
        else:
            cp -= 0x10000
            out.append(chr(0xD800 + (cp >> 10)))
            out.append(chr(0xDC00 + (cp & 0x3FF)))
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Line endings
# --------------------------------------------------------------------------------------------


def line_ending_at(original: str, offset: int) -> str:
    """The line ending of the line holding ``offset``: its own ``\\n`` or ``\\r\\n``, or that of
    the line before for an unterminated last line; a lone ``\\r`` counts only in a file without
    any ``\\n`` (Pi 1.6's ``getLineEndingAt``)."""
    lf = original.find("\n", offset)
    if lf == -1:
        lf = original.rfind("\n", 0, offset + 1)
    if lf == -1:
        return "\r" if "\r" in original else "\n"
    return "\r\n" if lf > 0 and original[lf - 1] == "\r" else "\n"


def normalize_to_lf(text: str) -> str:
    """``\\r\\n`` → ``\\n``, then every remaining ``\\r`` → ``\\n`` (Pi's ``normalizeToLF``)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class LineEndingView:
    """The LF-normalised view of ``original`` and the way back.

    ``text`` is ``normalize_to_lf(original)``. Each ``\\r\\n`` shrinks to one character;
    ``crlf_at`` lists (ascending) the view positions of the ``\\n`` that stand for a ``\\r\\n``.
    """

    original: str
    text: str
    crlf_at: list[int]

    @classmethod
    def of(cls, original: str) -> LineEndingView:
        crlf_at: list[int] = []
        if "\r" not in original:
            return cls(original, original, crlf_at)
        pos = original.find("\r\n")
        while pos != -1:
            # view position = original position minus the CRLFs before it
            crlf_at.append(pos - len(crlf_at))
            pos = original.find("\r\n", pos + 2)
        return cls(original, normalize_to_lf(original), crlf_at)

    def to_original(self, pos: int) -> int:
        """The original position of view position ``pos`` (``0 <= pos <= len(text)``)."""
        return pos + bisect_left(self.crlf_at, pos)


# --------------------------------------------------------------------------------------------
# Fuzzy normalisation
# --------------------------------------------------------------------------------------------

_FUZZY_TRANSLATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


def normalize_for_fuzzy_match(text: str) -> str:
    """Pi's ``normalizeForFuzzyMatch``, in its order: NFKC; JavaScript ``trimEnd`` of every
    line; smart single quotes → ``'``; smart double quotes → ``"``; Unicode dashes and minus →
    ``-``; special spaces → space. Each step but NFKC and the trim keeps string positions."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(js_trim_end(line) for line in text.split("\n"))
    return text.translate(_FUZZY_TRANSLATION)


def _nfkc_clusters(line: str) -> list[tuple[int, int, str]]:
    """``line`` cut into clusters that NFKC normalises independently: ``(start, end, nfkc)``.

    A cluster starts at each character of canonical combining class 0. When NFKC joins two such
    clusters (Hangul jamo, a few scripts' vowel signs), the whole line is one cluster.
    """
    starts = [i for i, c in enumerate(line) if i == 0 or unicodedata.combining(c) == 0]
    clusters: list[tuple[int, int, str]] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(line)
        clusters.append((start, end, unicodedata.normalize("NFKC", line[start:end])))
    if "".join(c[2] for c in clusters) != unicodedata.normalize("NFKC", line):
        return [(0, len(line), unicodedata.normalize("NFKC", line))]
    return clusters


@dataclass(frozen=True)
class _Segment:
    fz_start: int  # in the fuzzy line
    fz_end: int
    n_start: int  # in the normalised line
    n_end: int


@dataclass
class FuzzyView:
    """``normalize_for_fuzzy_match(source)`` and a map from its positions back to ``source``.

    Lines correspond one to one (the fuzzy normalisation never adds or removes a ``\\n``), so a
    position is first placed in its line, then in the NFKC cluster of that line that produced it.
    """

    source: str
    text: str
    _fz_line_starts: list[int]
    _src_line_starts: list[int]
    _src_lines: list[str]
    _segments: dict[int, list[_Segment]] = field(default_factory=dict)

    @classmethod
    def of(cls, source: str) -> FuzzyView:
        src_lines = source.split("\n")
        fz_lines = [
            js_trim_end(unicodedata.normalize("NFKC", line)).translate(_FUZZY_TRANSLATION)
            for line in src_lines
        ]
        fz_starts: list[int] = []
        src_starts: list[int] = []
        fz_pos = src_pos = 0
        for src_line, fz_line in zip(src_lines, fz_lines, strict=True):
            fz_starts.append(fz_pos)
            src_starts.append(src_pos)
            fz_pos += len(fz_line) + 1
            src_pos += len(src_line) + 1
        return cls(source, "\n".join(fz_lines), fz_starts, src_starts, src_lines)

    def _line_segments(self, line_no: int) -> list[_Segment]:
        segments = self._segments.get(line_no)
        if segments is None:
            segments = []
            line = self._src_lines[line_no]
            fz_len = len(
                js_trim_end(unicodedata.normalize("NFKC", line)).translate(_FUZZY_TRANSLATION)
            )
            fz_pos = 0
            for start, end, nfkc in _nfkc_clusters(line):
                length = max(0, min(len(nfkc), fz_len - fz_pos))
                segments.append(_Segment(fz_pos, fz_pos + length, start, end))
                fz_pos += length
            self._segments[line_no] = segments
        return segments

    def locate(self, pos: int, *, end: bool) -> tuple[int, int]:
        """The character of fuzzy position ``pos`` (``0 <= pos < len(text)``) as
        ``(source_position, fuzzy_cluster_boundary)``: with ``end=False`` the start of its source
        cluster and the fuzzy position where that cluster starts; with ``end=True`` the end of
        its source cluster and the fuzzy position where that cluster ends."""
        line_no = bisect_right(self._fz_line_starts, pos) - 1
        offset = pos - self._fz_line_starts[line_no]
        fz_line_len = (
            self._fz_line_starts[line_no + 1] - 1
            if line_no + 1 < len(self._fz_line_starts)
            else len(self.text)
        ) - self._fz_line_starts[line_no]
        src_line_start = self._src_line_starts[line_no]
        if offset >= fz_line_len:  # the "\n" after the line: maps one to one
            src = src_line_start + len(self._src_lines[line_no])
            return (src + 1, pos + 1) if end else (src, pos)
        for seg in self._line_segments(line_no):
            if seg.fz_start <= offset < seg.fz_end:
                fz_line_start = self._fz_line_starts[line_no]
                if end:
                    return src_line_start + seg.n_end, fz_line_start + seg.fz_end
                return src_line_start + seg.n_start, fz_line_start + seg.fz_start
        raise AssertionError("fuzzy position outside every segment")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Matching and applying
# --------------------------------------------------------------------------------------------


_BORDER_CHECK_LIMIT = 10_000


def _has_border(needle: Any) -> bool:
    """Whether a proper prefix of ``needle`` is also its suffix (occurrences can overlap only
    then); ``True`` when it is too long to check cheaply."""
    if len(needle) > _BORDER_CHECK_LIMIT:
        return True
    first = needle[:1]
    pos = needle.find(first, 1)
    while pos != -1:
        if needle.startswith(needle[pos:]):
            return True
        pos = needle.find(first, pos + 1)
    return False


def count_occurrences(haystack: Any, needle: Any, start: int = 0) -> int:
    """Occurrences of ``needle`` in ``haystack[start:]`` (``str`` or ``bytes``), overlapping
    ones included: ``count`` at C speed when occurrences cannot overlap."""
    if not _has_border(needle):
        return haystack.count(needle, start)
    count = 0
    pos = haystack.find(needle, start)
    while pos != -1:
        count += 1
        pos = haystack.find(needle, pos + 1)
    return count


@dataclass(frozen=True)
class Replacement:
    """One located edit: ``[start, end)`` of the LF-normalised view is replaced by ``text``
    (LF line breaks; lone ``\\r`` kept). ``fuzzy`` says how it was found."""

    edit_index: int
    start: int
    end: int
    text: str
    fuzzy: bool


@dataclass(frozen=True)
class AppliedEdits:
    """The outcome of :func:`apply_edits`.

    ``base_content``/``new_content``: the file before and after, LF-normalised (the display diff
    compares these). ``new_text``: the file after, in the original's own line endings (what is
    written, BOM excluded). ``replacements`` in file order.
    """

    base_content: str
    new_content: str
    new_text: str
    replacements: list[Replacement]


def _edit_texts(edit: Any) -> tuple[str, str]:
    if isinstance(edit, dict):
        return edit["oldText"], edit["newText"]
    return edit.old_text, edit.new_text


def apply_edits(original: str, edits: Sequence[Any], path: str) -> AppliedEdits:
    """Apply ``edits`` (``{"oldText", "newText"}`` dicts) to ``original`` (decoded text, BOM
    removed, line endings as in the file), all located in ``original``, all or nothing.

    Raises :class:`EditError` with Pi's text for: an empty ``oldText`` (checked for every edit
    first), an ``oldText`` not found (with the closest-match context), found more than once,
    two edits overlapping, or a result identical to the original.
    """
    total = len(edits)
    pairs = [_edit_texts(e) for e in edits]
    olds = [normalize_to_lf(old) for old, _ in pairs]
    news = [normalize_to_lf(new) for _, new in pairs]
    for i, old in enumerate(olds):
        if not old:
            raise _empty_old_text_error(path, i, total)

    view = LineEndingView.of(original)
    content = view.text
    fuzzy: FuzzyView | None = None
    replacements: list[Replacement] = []
    for i, (old, new) in enumerate(zip(olds, news, strict=True)):
        index = content.find(old)
        if index != -1:
            occurrences = count_occurrences(content, old)
            if occurrences > 1:
                raise _duplicate_error(path, i, total, occurrences)
            replacements.append(Replacement(i, index, index + len(old), new, False))
            continue
        if fuzzy is None:
            fuzzy = FuzzyView.of(content)
        fz_old = normalize_for_fuzzy_match(old)
        index = fuzzy.text.find(fz_old) if fz_old else -1
        if index == -1:
            raise _not_found_error(path, i, total, content, old)
        occurrences = count_occurrences(fuzzy.text, fz_old)
        if occurrences > 1:
            raise _duplicate_error(path, i, total, occurrences)
        end = index + len(fz_old)
        start_src, start_fz = fuzzy.locate(index, end=False)
        end_src, end_fz = fuzzy.locate(end - 1, end=True)
        text = fuzzy.text[start_fz:index] + new + fuzzy.text[end:end_fz]
        replacements.append(Replacement(i, start_src, end_src, text, True))

    replacements.sort(key=lambda r: r.start)
    for prev, cur in itertools.pairwise(replacements):
        if prev.end > cur.start:
            raise EditError(
                f"edits[{prev.edit_index}] and edits[{cur.edit_index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )

    new_content = _splice(
        content, replacements, lambda r: r.start, lambda r: r.end, lambda r: r.text
    )
    if new_content == content:
        raise _no_change_error(path, total)
    # without any CR the original is its LF view, and the LF result is what is written
    new_text = new_content
    if original is not content:
        new_text = _splice(
            original,
            replacements,
            lambda r: view.to_original(r.start),
            lambda r: view.to_original(r.end),
            lambda r: _with_line_ending(
                r.text, line_ending_at(original, view.to_original(r.start))
            ),
        )
    return AppliedEdits(content, new_content, new_text, replacements)


def _with_line_ending(text: str, ending: str) -> str:
    return text if ending == "\n" else text.replace("\n", ending)


def _splice(
    text: str,
    replacements: Sequence[Replacement],
    start: Callable[[Replacement], int],
    end: Callable[[Replacement], int],
    new: Callable[[Replacement], str],
) -> str:
    """``text`` with each replacement's ``[start, end)`` (sorted, disjoint) replaced by its
    ``new`` text. A ``\\r`` that would end up just before an ``\\n`` across a seam gets an
    ``\\n`` of its own, so the two never merge into one CRLF line break (only a text with
    CRs can have one)."""
    parts: list[str] = []
    ends_with_cr = False

    def push(part: str) -> None:
        nonlocal ends_with_cr
        if not part:
            return
        if ends_with_cr and part[0] == "\n":
            parts.append("\n")
        parts.append(part)
        ends_with_cr = part[-1] == "\r"

    pos = 0
    for r in replacements:
        push(text[pos : start(r)])
        push(new(r))
        pos = end(r)
    push(text[pos:])
    return "".join(parts)


def find_closest_match_context(content: str, old_text: str) -> str | None:
    """Upstream Pi's ``findClosestMatchContext``: where the model probably meant to edit.

    Prefixes of the first line of ``old_text`` (trimmed; 60, 50, … 10 UTF-16 units long) are
    looked for in the lines of ``content``; the first line holding one gives
    ``Closest match is around line N:`` and the lines from two before it to three after the
    old text's length. Otherwise ``File starts with:`` and the first five lines. ``None`` when the
    first line of ``old_text`` is blank. Lines are formatted ``"  {n}: {line}"``.
    """
    lines = content.split("\n")
    old_lines = old_text.split("\n")
    first = _to_utf16_units(js_trim(old_lines[0]))
    if not first:
        return None
    js_lines: list[str] | None = None
    length = min(len(first), 60)
    while length >= 10:
        needle = js_trim(first[:length])
        if needle:
            if js_lines is None:
                js_lines = [_to_utf16_units(line) for line in lines]
            idx = next((k for k, line in enumerate(js_lines) if needle in line), -1)
            if idx != -1:
                start = max(0, idx - 2)
                end = min(len(lines), idx + len(old_lines) + 3)
                snippet = "\n".join(
                    f"  {start + k + 1}: {line}" for k, line in enumerate(lines[start:end])
                )
                return f"Closest match is around line {idx + 1}:\n{snippet}"
        length -= 10
    preview = "\n".join(f"  {k + 1}: {line}" for k, line in enumerate(lines[:5]))
    return f"File starts with:\n{preview}"


# --------------------------------------------------------------------------------------------
# jsdiff: diffLines
# --------------------------------------------------------------------------------------------

_LINE_SPLIT = re.compile(r"(\n|\r\n)")


def tokenize_lines(value: str) -> list[str]:
    """jsdiff's line tokens: each line with its ``\\n`` or ``\\r\\n``; no empty tokens."""
    parts = _LINE_SPLIT.split(value)
    if parts and not parts[-1]:
        parts.pop()
    tokens: list[str] = []
    for i, part in enumerate(parts):
        if i % 2:
            tokens[-1] += part
        else:
            tokens.append(part)
    return [t for t in tokens if t]


@dataclass
class _Component:
    count: int
    added: bool
    removed: bool
    previous: _Component | None


@dataclass
class _Path:
    old_pos: int
    last: _Component | None


@dataclass(frozen=True)
class DiffPart:
    """One run of jsdiff's ``diffLines`` result: ``value`` (the lines, joined), ``count`` (of
    lines), and whether they were ``added`` or ``removed`` (neither: common)."""

    value: str
    count: int
    added: bool = False
    removed: bool = False


def _add_to_path(path: _Path, added: bool, removed: bool, old_inc: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        return _Path(
            path.old_pos + old_inc, _Component(last.count + 1, added, removed, last.previous)
        )
    return _Path(path.old_pos + old_inc, _Component(1, added, removed, last))


def _extract_common(path: _Path, new: list[str], old: list[str], diagonal: int) -> int:
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = 0
    while (
        new_pos + 1 < len(new) and old_pos + 1 < len(old) and old[old_pos + 1] == new[new_pos + 1]
    ):
        new_pos += 1
        old_pos += 1
        common += 1
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos
    return new_pos


def _build_token_parts(
    last: _Component | None, new: list[str], old: list[str]
) -> list[tuple[list[str], bool, bool]]:
    """The components of a finished path as ``(tokens, added, removed)``, in order."""
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    parts: list[tuple[list[str], bool, bool]] = []
    new_pos = old_pos = 0
    for c in components:
        if not c.removed:
            tokens = new[new_pos : new_pos + c.count]
            new_pos += c.count
            if not c.added:
                old_pos += c.count
        else:
            tokens = old[old_pos : old_pos + c.count]
            old_pos += c.count
        parts.append((tokens, c.added, c.removed))
    return parts


def diff_lines(old_str: str, new_str: str) -> list[DiffPart]:
    """jsdiff 8 ``diffLines(old, new)``: Myers' O(ND) diff over line tokens, with jsdiff's
    choices where several shortest scripts exist (an insertion is preferred when both paths
    reach the same old position; removals come before additions). Untrimmed: the whole texts
    are tokenized (:func:`line_diff` gives the same parts for the cost of the changed lines)."""
    return [
        DiffPart("".join(tokens), len(tokens), added, removed)
        for tokens, added, removed in _diff_tokens(tokenize_lines(old_str), tokenize_lines(new_str))
    ]


def _diff_tokens(old: list[str], new: list[str]) -> list[tuple[list[str], bool, bool]]:
    """:func:`diff_lines` over token lists: ``(tokens, added, removed)`` parts.

    When no token of ``old`` is in ``new`` every script removes all of ``old`` and adds all of
    ``new``: that answer is returned at once (Myers' search would cost O((N+M)^2) steps to find
    it, minutes for a block of a few thousand rewritten lines)."""
    if old and new and new[0] != old[0] and set(old).isdisjoint(new):
        return [(old, False, True), (new, True, False)]
    old_len, new_len = len(old), len(new)
    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    root = best[0]
    assert root is not None
    new_pos = _extract_common(root, new, old, 0)
    if root.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build_token_parts(root.last, new, old)
    min_diag: float = float("-inf")
    max_diag: float = float("inf")
    edit_length = 1
    while edit_length <= old_len + new_len:
        diag = int(max(min_diag, -edit_length))
        top = int(min(max_diag, edit_length))
        while diag <= top:
            remove_path = best.get(diag - 1)
            add_path = best.get(diag + 1)
            if remove_path is not None:
                best[diag - 1] = None
            can_add = False
            if add_path is not None:
                add_new_pos = add_path.old_pos - diag
                can_add = 0 <= add_new_pos < new_len
            can_remove = remove_path is not None and remove_path.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diag] = None
                diag += 2
                continue
            if not can_remove or (
                can_add
                and remove_path is not None
                and add_path is not None
                and remove_path.old_pos < add_path.old_pos
            ):
                assert add_path is not None
                base = _add_to_path(add_path, True, False, 0)
            else:
                assert remove_path is not None
                base = _add_to_path(remove_path, False, True, 1)
            new_pos = _extract_common(base, new, old, diag)
            if base.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _build_token_parts(base.last, new, old)
            best[diag] = base
            if base.old_pos + 1 >= old_len:
                max_diag = min(max_diag, diag - 1)
            if new_pos + 1 >= new_len:
                min_diag = max(min_diag, diag + 1)
            diag += 2
        edit_length += 1
    raise AssertionError("diff_lines did not terminate")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Trimmed line diff: the same parts for the cost of the changed lines
# --------------------------------------------------------------------------------------------

_FIRST_STEP = 256
_MAX_STEP = 1 << 16

Text = str | bytes
"""A text a common run is read from: ``str``, or UTF-8 ``bytes`` (decoded token by token)."""


def common_prefix_length(a: Text, b: Text, a_pos: int = 0, b_pos: int = 0) -> int:
    """Length of the common prefix of ``a[a_pos:]`` and ``b[b_pos:]``, compared slice by slice
    (C speed; at most 64 KiB copied at a time)."""
    n = min(len(a) - a_pos, len(b) - b_pos)
    done = 0
    step = _FIRST_STEP
    while done < n:
        k = min(step, n - done)
        i, j = a_pos + done, b_pos + done
        if a[i : i + k] == b[j : j + k]:
            done += k
            step = min(step * 2, _MAX_STEP)
            continue
        lo, hi = 0, k  # the first lo characters agree; the first difference is before hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[i + lo : i + mid] == b[j + lo : j + mid]:
                lo = mid
            else:
                hi = mid
        return done + lo
    return done


def common_suffix_length(a: Text, b: Text, limit: int) -> int:
    """Length (at most ``limit``) of the common suffix of ``a`` and ``b``, compared slice by
    slice."""
    n = min(limit, len(a), len(b))
    done = 0
    step = _FIRST_STEP
    la, lb = len(a), len(b)
    while done < n:
        k = min(step, n - done)
        if a[la - done - k : la - done] == b[lb - done - k : lb - done]:
            done += k
            step = min(step * 2, _MAX_STEP)
            continue
        lo, hi = 0, k  # the last lo characters agree; the last difference is within hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[la - done - mid : la - done - lo] == b[lb - done - mid : lb - done - lo]:
                lo = mid
            else:
                hi = mid
        return done + lo
    return done


def _newline(text: Text) -> Any:
    return "\n" if isinstance(text, str) else b"\n"


def _as_str(token: Text) -> str:
    return token if isinstance(token, str) else token.decode("utf-8")


class _Run:
    """One part of a line diff: ``count`` tokens (lines with their ``\\n``), ``added``,
    ``removed`` or neither (common). Common runs may be views of a large text: only their
    first and last lines are ever taken."""

    count: int
    added: bool = False
    removed: bool = False

    def head(self, k: int) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def tail(self, k: int) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def tokens(self) -> list[str]:
        return self.head(self.count)


class _TokenRun(_Run):
    def __init__(self, tokens: list[str], added: bool, removed: bool) -> None:
        self._tokens = tokens
        self.count = len(tokens)
        self.added = added
        self.removed = removed

    def head(self, k: int) -> list[str]:
        return self._tokens[:k]

    def tail(self, k: int) -> list[str]:
        return self._tokens[max(0, self.count - k) :] if k > 0 else []


class _TextRun(_Run):
    """The whole lines of ``text[start:end]`` (``start`` at a line start), common to both
    sides."""

    def __init__(self, text: Text, start: int, end: int) -> None:
        self._text, self._start, self._end = text, start, end
        nl = _newline(text)
        self.newlines = text.count(nl, start, end) if end > start else 0
        self.count = (
            0 if end <= start else self.newlines + (0 if text.endswith(nl, start, end) else 1)
        )

    def head(self, k: int) -> list[str]:
        text, nl, pos = self._text, _newline(self._text), self._start
        out: list[str] = []
        while len(out) < k and pos < self._end:
            stop = text.find(nl, pos, self._end)
            stop = self._end if stop == -1 else stop + 1
            out.append(_as_str(text[pos:stop]))
            pos = stop
        return out

    def tail(self, k: int) -> list[str]:
        text, nl, pos = self._text, _newline(self._text), self._end
        out: list[str] = []
        while len(out) < k and pos > self._start:
            begin = text.rfind(nl, self._start, pos - 1) + 1
            begin = max(begin, self._start)
            out.append(_as_str(text[begin:pos]))
            pos = begin
        out.reverse()
        return out


class _JoinedRun(_Run):
    """Consecutive common runs as one (jsdiff never has two common parts in a row)."""

    def __init__(self, first: _Run, second: _Run) -> None:
        self._first, self._second = first, second
        self.count = first.count + second.count

    def head(self, k: int) -> list[str]:
        out = self._first.head(k)
        return out + self._second.head(k - len(out)) if len(out) < k else out

    def tail(self, k: int) -> list[str]:
        out = self._second.tail(k)
        return self._first.tail(k - len(out)) + out if len(out) < k else out


@dataclass(frozen=True)
class LineDiff:
    """jsdiff's ``diffLines`` of two texts as runs (:class:`_Run`), and the texts' line counts
    (``text.split("\\n")``: newlines plus one), which set the width of line numbers."""

    runs: list[_Run]
    old_lines: int
    new_lines: int


class DiffTooLarge(Exception):
    """The changed region of a bounded diff (:func:`line_diff_of_region`) exceeds its limit."""


def line_diff_of_region(
    text: Text,
    start: int,
    prefix_end: int,
    old_mid: str,
    new_mid: str,
    suffix_start: int,
    end: int,
    *,
    old_lines: int | None = None,
    new_lines: int | None = None,
    max_chars: int | None = None,
) -> LineDiff:
    """The line diff of ``old = text[start:prefix_end] + old_mid + text[suffix_start:end]`` and
    ``new = text[start:prefix_end] + new_mid + text[suffix_start:end]``, diffing only the
    middles: the same runs as :func:`diff_lines` of the whole texts.

    ``prefix_end`` and ``suffix_start`` must be line starts of ``text`` (or ``start``/``end``) and
    the middles whole lines (``text`` may be UTF-8 bytes; middles are ``str``). The common prefix
    is exact as it is: jsdiff's first move takes every common leading line. The common suffix
    is exact once its first line occurs in neither middle (proof: every shortest edit script
    then matches that line with itself, and no snake leaves the middles' box except at its
    corner, so Myers' search inside the box is the same); until then its first line moves into
    both middles. ``max_chars``: raise :class:`DiffTooLarge` when the middles grow beyond it.
    ``old_lines``/``new_lines``: the texts' line counts when the caller knows them, else
    counted here from the runs (the prefix and suffix are counted once either way).
    """
    nl = _newline(text)
    old_tokens = tokenize_lines(old_mid)
    new_tokens = tokenize_lines(new_mid)
    seen = set(old_tokens)
    seen.update(new_tokens)
    grown = 0
    while suffix_start < end:
        stop = text.find(nl, suffix_start, end)
        stop = end if stop == -1 else stop + 1
        token = _as_str(text[suffix_start:stop])
        if token not in seen:
            break
        old_tokens.append(token)
        new_tokens.append(token)
        suffix_start = stop
        grown += len(token)
        if max_chars is not None and len(old_mid) + len(new_mid) + 2 * grown > max_chars:
            raise DiffTooLarge
    runs: list[_Run] = []

    def add(run: _Run) -> None:
        if not run.count:
            return
        if runs and not (run.added or run.removed) and not (runs[-1].added or runs[-1].removed):
            runs[-1] = _JoinedRun(runs[-1], run)
        else:
            runs.append(run)

    prefix = _TextRun(text, start, prefix_end)
    suffix = _TextRun(text, suffix_start, end)
    if old_lines is None:
        old_lines = prefix.newlines + sum(t.count("\n") for t in old_tokens) + suffix.newlines + 1
    if new_lines is None:
        new_lines = prefix.newlines + sum(t.count("\n") for t in new_tokens) + suffix.newlines + 1
    add(prefix)
    for tokens, added, removed in _diff_tokens(old_tokens, new_tokens):
        add(_TokenRun(tokens, added, removed))
    add(suffix)
    return LineDiff(runs, old_lines, new_lines)


def line_diff(old: str, new: str) -> LineDiff:
    """:func:`diff_lines` of ``old`` and ``new`` as a :class:`LineDiff`, diffing only the lines
    between their common leading and trailing lines (found at C speed)."""
    prefix = common_prefix_length(old, new)
    prefix_end = old.rfind("\n", 0, prefix) + 1
    suffix = common_suffix_length(old, new, min(len(old), len(new)) - prefix_end)
    old_end, new_end = len(old) - suffix, len(new) - suffix
    if not (
        (old_end == prefix_end or old[old_end - 1] == "\n")
        and (new_end == prefix_end or new[new_end - 1] == "\n")
    ):
        # start the suffix at its first line start (a newline inside the common suffix)
        newline = old.find("\n", old_end)
        old_end = len(old) if newline == -1 else newline + 1
        new_end = len(new) - (len(old) - old_end)
    return line_diff_of_region(
        old,
        0,
        prefix_end,
        old[prefix_end:old_end],
        new[prefix_end:new_end],
        old_end,
        len(old),
        old_lines=old.count("\n") + 1,
        new_lines=new.count("\n") + 1,
    )


# --------------------------------------------------------------------------------------------
# Display diff and unified patch
# --------------------------------------------------------------------------------------------


def _display_line(token: str) -> str:
    return token[:-1] if token.endswith("\n") else token


@dataclass(frozen=True)
class DisplayDiff:
    """Pi's display diff: ``diff`` (the text) and ``first_changed_line`` (1-based line of the
    new file where the first change starts; ``None`` when nothing changed)."""

    diff: str
    first_changed_line: int | None


def generate_diff_string(old: str, new: str, context_lines: int = 4) -> DisplayDiff:
    """Pi's ``generateDiffString``: ``-N text`` removed, ``+N text`` added, `` N text`` context
    (old numbering), numbers right-aligned to the widest; ``context_lines`` of context around each
    change, a gap of more than twice that shown as `` {pad} ...``."""
    return format_diff_string(line_diff(old, new), context_lines)


def format_diff_string(diff: LineDiff, context_lines: int = 4) -> DisplayDiff:
    """:func:`generate_diff_string` of a computed :class:`LineDiff` (of LF texts)."""
    runs = diff.runs
    width = len(str(max(diff.old_lines, diff.new_lines)))
    skipped_marker = f" {'':>{width}} ..."
    out: list[str] = []
    old_no = new_no = 1
    last_was_change = False
    first_changed: int | None = None

    def context(lines: list[str]) -> None:
        nonlocal old_no, new_no
        for line in lines:
            out.append(f" {old_no:>{width}} {_display_line(line)}")
            old_no += 1
            new_no += 1

    def skip(count: int) -> None:
        nonlocal old_no, new_no
        old_no += count
        new_no += count

    for i, run in enumerate(runs):
        if run.added or run.removed:
            if first_changed is None:
                first_changed = new_no
            for line in run.tokens():
                if run.added:
                    out.append(f"+{new_no:>{width}} {_display_line(line)}")
                    new_no += 1
                else:
                    out.append(f"-{old_no:>{width}} {_display_line(line)}")
                    old_no += 1
            last_was_change = True
            continue
        count = run.count
        next_is_change = i < len(runs) - 1 and (runs[i + 1].added or runs[i + 1].removed)
        if last_was_change and next_is_change:
            if count <= context_lines * 2:
                context(run.head(count))
            else:
                context(run.head(context_lines))
                out.append(skipped_marker)
                skip(count - 2 * context_lines)
                context(run.tail(context_lines))
        elif last_was_change:
            shown = run.head(context_lines)
            context(shown)
            if count > len(shown):
                out.append(skipped_marker)
                skip(count - len(shown))
        elif next_is_change:
            skipped = max(0, count - context_lines)
            if skipped > 0:
                out.append(skipped_marker)
                skip(skipped)
            context(run.tail(count - skipped))
        else:
            skip(count)
        last_was_change = False
    return DisplayDiff("\n".join(out), first_changed)


def generate_unified_patch(path: str, old: str, new: str, context_lines: int = 4) -> str:
    """A unified diff of ``old`` → ``new`` with file headers only, as jsdiff's
    ``createTwoFilesPatch(path, path, old, new, undefined, undefined, {context: 4,
    headerOptions: FILE_HEADERS_ONLY})``: ``--- path``/``+++ path``, ``@@ -s,n +s,n @@`` hunks
    (an empty range starts one line earlier), ``\\ No newline at end of file`` after a last line
    without one. Lines keep any ``\\r``, so a patch of CRLF text applies to the CRLF file."""
    return format_unified_patch(path, line_diff(old, new), context_lines)


def format_unified_patch(path: str, diff: LineDiff, context_lines: int = 4) -> str:
    """:func:`generate_unified_patch` of a computed :class:`LineDiff`."""
    runs = diff.runs
    hunks: list[tuple[int, int, int, int, list[str]]] = []
    old_range_start = new_range_start = 0
    cur: list[str] = []
    old_line = new_line = 1
    # jsdiff appends an empty common entry after the last part: index len(runs)
    for i in range(len(runs) + 1):
        run = runs[i] if i < len(runs) else None
        added = run is not None and run.added
        removed = run is not None and run.removed
        if run is not None and (added or removed):
            lines = run.tokens()
            if not old_range_start:
                old_range_start, new_range_start = old_line, new_line
                if i > 0:
                    cur = (
                        [" " + line for line in runs[i - 1].tail(context_lines)]
                        if context_lines > 0
                        else []
                    )
                    old_range_start -= len(cur)
                    new_range_start -= len(cur)
            cur.extend(("+" if added else "-") + line for line in lines)
            if added:
                new_line += len(lines)
            else:
                old_line += len(lines)
            continue
        count = run.count if run is not None else 0
        if old_range_start:
            if count <= context_lines * 2 and i < len(runs) - 1:
                assert run is not None
                cur.extend(" " + line for line in run.head(count))
            else:
                size = min(count, context_lines)
                if run is not None:
                    cur.extend(" " + line for line in run.head(size))
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
        old_line += count
        new_line += count

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


__all__ = [
    "JS_WHITESPACE",
    "AppliedEdits",
    "DiffPart",
    "DiffTooLarge",
    "DisplayDiff",
    "EditError",
    "FuzzyView",
    "LineDiff",
    "LineEndingView",
    "Replacement",
    "apply_edits",
    "common_prefix_length",
    "common_suffix_length",
    "count_occurrences",
    "diff_lines",
    "find_closest_match_context",
    "format_diff_string",
    "format_unified_patch",
    "generate_diff_string",
    "generate_unified_patch",
    "js_trim",
    "js_trim_end",
    "line_diff",
    "line_diff_of_region",
    "line_ending_at",
    "normalize_for_fuzzy_match",
    "normalize_to_lf",
    "not_found_header",
    "tokenize_lines",
]
