"""grep's windowed search of a large file for fixed text (issue 13, P8): lines over
``WINDOW_BYTES`` go to ripgrep in overlapping pieces, and the result must be byte for byte the
one ripgrep's search of the file itself gives
(:func:`pi_builtin_tools.search.grep._windowed_matches`).

The differential test runs both paths on many generated files with the window made tiny (so
every file has many cut lines, matches across piece edges and multibyte characters cut in two)
and requires the same text and details; a spy on ``_windowed_matches`` checks that the windowed
path really gave the result (it falls back to the normal search when it cannot be sure).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.search import grep as grep_module
from pi_builtin_tools.search.grep import _Cutter, _literal_reach, create_grep_tool_definition

MIB = 1024 * 1024

NOTICE_LONG = "Some lines truncated to 500 chars. Use read tool to see full lines"


class Spy:
    """Records what each ``_windowed_matches`` call returned (``None``: fell back)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.results: list[Any] = []
        real = grep_module._windowed_matches

        async def spy(*args: Any, **kwargs: Any) -> Any:
            result = await real(*args, **kwargs)
            self.results.append(result)
            return result

        monkeypatch.setattr(grep_module, "_windowed_matches", spy)


async def run_grep(cwd: Path, **params: Any) -> tuple[str, Any]:
    tool = create_grep_tool_definition(str(cwd), LocalFileOperations())
    result = await tool.execute("c1", params, None, None)
    return result.content[0].text, result.details  # type: ignore[union-attr]


def both_ways(
    monkeypatch: pytest.MonkeyPatch, cwd: Path, width: int, block: int, **params: Any
) -> tuple[tuple[str, Any], tuple[str, Any], Any]:
    """The result of the normal search, the windowed one's, and what the windowed search
    returned (``None``: it fell back)."""
    monkeypatch.setattr(grep_module, "WINDOWED_MIN_BYTES", 1 << 62)
    normal = trio.run(lambda: run_grep(cwd, **params))
    monkeypatch.setattr(grep_module, "WINDOWED_MIN_BYTES", -1)  # the empty file too
    monkeypatch.setattr(grep_module, "WINDOW_BYTES", width)
    monkeypatch.setattr(grep_module, "WINDOW_READ_BYTES", block)
    spy = Spy(monkeypatch)
    windowed = trio.run(lambda: run_grep(cwd, **params))
    monkeypatch.undo()
    return normal, windowed, spy.results[0] if spy.results else "not tried"


# -- the pieces -------------------------------------------------------------------------------


def test_cutter_cuts_long_lines_into_overlapping_pieces() -> None:
    cutter = _Cutter(8, 3)
    data = b"short\n" + b"0123456789abcdefghij\n" + b"x" * 8 + b"\n" + b"tail-no-newline"
    out = b"".join(
        bytes(part) for chunk in (data[:10], data[10:11], data[11:]) for part in cutter.feed(chunk)
    )
    assert out == (
        b"short\n01234567\n56789abc\nabcdefgh\nfghij\nxxxxxxxx\ntail-no-\nno-newli\nwline"
    )
    assert cutter.cuts == [3, 4, 5, 8, 9]
    assert cutter.cut_lines == {2: 6, 4: 36}
    # synthetic lines 1..9 -> lines of the file
    assert [cutter.line_of(n) for n in range(1, 10)] == [1, 2, 2, 2, 2, 3, 4, 4, 4]


def test_literal_reach() -> None:
    assert _literal_reach("needle", literal=False, ignore_case=False) == 6
    assert _literal_reach("néedle", literal=False, ignore_case=False) == 7
    assert _literal_reach("needle", literal=False, ignore_case=True) == 24
    assert _literal_reach("a b_c-d,e;f:g!h@i%j=k'l\"m/n<o>", literal=False, ignore_case=False) == 30
    for regex in ("a.b", "a*", "(a)", "a|b", "[a]", "a{2}", "^a", "a$", "a\\b", "a+", "a?", "#a"):
        assert _literal_reach(regex, literal=False, ignore_case=False) is None, regex
        assert _literal_reach(regex, literal=True, ignore_case=False) == len(regex)
    assert _literal_reach("", literal=True, ignore_case=False) is None
    assert _literal_reach("a\nb", literal=True, ignore_case=False) is None
    assert _literal_reach("a\tb", literal=False, ignore_case=False) is None
    assert _literal_reach("\udcff", literal=True, ignore_case=False) is None


# -- exact values -----------------------------------------------------------------------------


def test_p8_like_file_gives_the_exact_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A one-line file with the match in the middle of a line cut in many pieces."""
    half = "lorem ipsum dolor sit amet consectetur " * 200
    (tmp_path / "one-line.txt").write_text(half + "needle " + half + "\n")
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 1024, 4096, pattern="needle", path="one-line.txt"
    )
    expected = f"one-line.txt:1: {half[:500]}... [truncated]\n\n[{NOTICE_LONG}]"
    assert normal == windowed == (expected, {"linesTruncated": True})
    assert used is not None and [m.line_number for m in used] == [1]


def test_pieces_of_one_line_count_as_one_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Sixty matches in one cut line and one in the next: limit 1 is reached by the second
    line, not by the line's second piece."""
    (tmp_path / "f.txt").write_text(("ab needle " * 60 + "\n") + "needle two\nlast\n")
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 64, 100, pattern="needle", path="f.txt", limit=1
    )
    assert (
        normal
        == windowed
        == (
            "f.txt:1: " + ("ab needle " * 50) + "... [truncated]\n\n"
            "[1 matches limit reached. Use limit=2 for more, or refine pattern. "
            + NOTICE_LONG
            + "]",
            {"matchLimitReached": 1, "linesTruncated": True},
        )
    )
    assert [m.line_number for m in used] == [1, 2]


def test_an_empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "f.txt").write_bytes(b"")
    normal, windowed, used = both_ways(monkeypatch, tmp_path, 64, 100, pattern="x", path="f.txt")
    assert normal == windowed == ("No matches found", None)
    assert used == []


def test_a_nul_byte_or_a_bom_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name, data in (
        ("nul.txt", b"x" * 300 + b"\0 needle\n"),
        ("bom.txt", b"\xef\xbb\xbfneedle\n"),
    ):
        (tmp_path / name).write_bytes(data)
        normal, windowed, used = both_ways(
            monkeypatch, tmp_path, 64, 100, pattern="needle", path=name
        )
        assert normal == windowed
        assert used is None


def test_a_long_line_of_few_grapheme_clusters_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """ripgrep's preview of a long line is 4,096 grapheme clusters: its size is known only when
    the line's first 8 KiB show that many (ASCII after ASCII); otherwise ripgrep's output could
    pass the backend's bound, so the normal search runs."""
    (tmp_path / "wide.txt").write_text("é" * 5000 + " needle\n" + "a" * 9000 + " needle\n")
    for limit, windowed_lines in ((1, [2]), (2, None)):
        (tmp_path / "f.txt").write_text(("a" * 9000 + " needle\n") * 2 + "é" * 5000 + " needle\n")
        normal, windowed, used = both_ways(
            monkeypatch, tmp_path, 64, 1000, pattern="needle", path="f.txt", limit=limit
        )
        assert normal == windowed
        assert (used if used is None else [m.line_number for m in used]) == (
            [1, 2] if windowed_lines else None
        )
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 64, 1000, pattern="needle", path="wide.txt"
    )
    assert normal == windowed
    assert used is None


def test_output_that_could_pass_the_backend_bound_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The normal search's output is cut at the backend's ``rg_max_output_bytes`` (and its
    result with it): the windowed search gives way when the lines found could make that much."""
    (tmp_path / "f.txt").write_text(("x" * 300 + " needle\n") * 3)
    # ripgrep writes PATH\0N:TEXT\n for each (path + 311 bytes); counted with room for a
    # preview's " [... N more matches]" (40 bytes) since each line here was cut
    bound = 3 * (len(str(tmp_path / "f.txt")) + 351)
    monkeypatch.setattr(LocalFileOperations, "rg_max_output_bytes", bound)
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 64, 1000, pattern="needle", path="f.txt"
    )
    assert normal == windowed
    assert [m.line_number for m in used] == [1, 2, 3]
    monkeypatch.setattr(LocalFileOperations, "rg_max_output_bytes", bound - 1)
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 64, 1000, pattern="needle", path="f.txt"
    )
    assert normal == windowed
    assert used is None
    # lines that were not cut count as they come: the search stops at the bound
    (tmp_path / "f.txt").write_text("needle\n" * 1000)
    monkeypatch.setattr(
        LocalFileOperations, "rg_max_output_bytes", 5 * (len(str(tmp_path / "f.txt")) + 10)
    )
    normal, windowed, used = both_ways(
        monkeypatch, tmp_path, 64, 1000, pattern="needle", path="f.txt", limit=1000
    )
    assert normal == windowed
    assert used is None


def test_a_regex_a_glob_or_a_directory_is_never_windowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "f.txt").write_text("x" * 300 + "needle\n")
    for params in (
        {"pattern": "need.e", "path": "f.txt"},
        {"pattern": "needle", "path": "f.txt", "glob": "*.txt"},
        {"pattern": "needle"},
    ):
        normal, windowed, used = both_ways(monkeypatch, tmp_path, 64, 100, **params)
        assert normal == windowed
        assert used == "not tried"


# -- the differential test --------------------------------------------------------------------

ALPHABET = [
    "a",
    "b",
    "e",
    "d",
    "l",
    "n",
    "N",
    "E",
    " ",
    "é",
    "É",
    "ß",
    "ẞ",
    "\u212a",
    "k",
    "K",
    "€",
    "😀",
    "x",
]
PATTERNS = [
    ("needle", False),
    ("NeEdLe", False),
    ("ab", False),
    ("é", False),
    ("ßk", False),
    ("k", False),
    ("a b", False),
    ("n.e", True),
    ("😀x", True),
]


def random_file(rng: random.Random, pattern: str, width: int) -> bytes:
    lines: list[str] = []
    for _ in range(rng.randint(0, 8)):
        kind = rng.random()
        if kind < 0.3:
            size = rng.randint(0, width)
        elif kind < 0.8:
            size = rng.randint(width, 6 * width)
        else:
            size = rng.randint(4000, 9000)
        ascii_share = rng.choice([0.0, 0.9, 0.99])  # mostly ASCII: see test_..._grapheme_...
        chars = [
            rng.choice("abx ") if rng.random() < ascii_share else rng.choice(ALPHABET)
            for _ in range(size)
        ]
        for _ in range(rng.randint(0, 4)):  # matches, some at piece edges
            variant = "".join(c.upper() if rng.random() < 0.5 else c for c in pattern)
            where = rng.choice(
                [
                    rng.randint(0, len(chars)),
                    *(k * (width // 2) + rng.randint(-3, 3) for k in range(1, 6)),
                ]
            )
            where = max(0, min(len(chars), where))
            chars[where:where] = list(rng.choice([pattern, variant]))
        lines.append("".join(chars))
    text = "".join(line + rng.choice(["\n", "\r\n"]) for line in lines)
    if rng.random() < 0.3:
        text += "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3 * width))) + pattern
    data = text.encode("utf-8")
    if data and rng.random() < 0.2:  # a byte that is not UTF-8
        spot = rng.randrange(len(data))
        data = data[:spot] + b"\xff" + data[spot:]
    return data


@pytest.mark.parametrize("seed", range(12))
def test_windowed_search_gives_the_normal_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
):
    rng = random.Random(seed)
    windowed_runs = 0
    for case in range(30):
        pattern, literal = rng.choice(PATTERNS)
        ignore_case = rng.random() < 0.5
        width = rng.choice([64, 100, 257])
        block = rng.choice([7, 64, 100, 1000, 1 << 16])
        data = random_file(rng, pattern, width)
        (tmp_path / "f.txt").write_bytes(data)
        params: dict[str, Any] = {"pattern": pattern, "path": "f.txt"}
        if ignore_case:
            params["ignoreCase"] = True
        if literal:
            params["literal"] = True
        if rng.random() < 0.5:
            params["limit"] = rng.choice([1, 2, 3, 5])
        if rng.random() < 0.3:
            params["context"] = rng.choice([1, 2])
        normal, windowed, used = both_ways(monkeypatch, tmp_path, width, block, **params)
        assert windowed == normal, (seed, case, params, width, block, data)
        if used not in (None, "not tried"):
            windowed_runs += 1
    assert windowed_runs >= 15


# -- memory -----------------------------------------------------------------------------------

_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
_, status, usage = os.wait4(child.pid, 0)
sys.stderr.write("TREE_PEAK_KB %d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""

_MAIN = "import sys\nfrom pi_core._cli import main\nsys.exit(main(sys.argv[1:]))"


def run_tree_measured(args: list[str], cwd: Path) -> tuple[int, str, str, int]:
    """Run ``pi ARGS...``; its exit status, stdout, stderr, and the peak RSS in bytes of the
    largest process of its tree, as GNU ``time -f %M`` reports it: ``ru_maxrss`` of
    ``wait4`` (the process and the children it waited for, ripgrep included), taken by a small
    parent process (a child started by vfork counts its parent's peak: this test process's)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, _MAIN, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )
    err = done.stderr.decode("utf-8", "replace")
    peak_lines = [line for line in err.splitlines() if line.startswith("TREE_PEAK_KB ")]
    assert peak_lines, err[-2000:]
    err = "".join(
        line for line in err.splitlines(keepends=True) if not line.startswith("TREE_PEAK_KB ")
    )
    return (
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        err,
        int(peak_lines[-1].split()[1]) * 1024,
    )


def test_grep_of_a_300mb_line_keeps_every_process_under_64mb(tmp_path: Path):
    """Issue 13 P8 at three times its size: the match in the middle of a 300 MB line. ripgrep
    searching the file itself maps it whole (300 MB resident) or buffers the line (450 MB);
    fed pieces of 1 MiB it stays small, and pi holds one block."""
    unit = b"lorem ipsum dolor sit amet consectetur "
    half = 150 * MIB // len(unit)
    with (tmp_path / "one-line.txt").open("wb") as handle:
        for _ in range(2):
            for _ in range(half // 10000):
                handle.write(unit * 10000)
            handle.write(unit * (half % 10000))
            if handle.tell() < 200 * MIB:
                handle.write(b"needle ")
        handle.write(b"\n")
    arguments = json.dumps({"pattern": "needle", "path": "one-line.txt"})
    status, out, err, peak = run_tree_measured(["call", "grep", arguments], tmp_path)
    assert (status, err) == (0, "")
    first = (unit.decode() * 13)[:500]
    assert out == (
        f"one-line.txt:1: {first}... [truncated]\n\n[Some lines truncated to 500 chars. Use "
        "read tool to see full lines]\n"
    )
    assert peak <= 64 * MIB


# -- the local backend's fed ripgrep ----------------------------------------------------------


async def _chunks(*parts: bytes, endless: bool = False) -> Any:
    for part in parts:
        yield part
    while endless:
        await trio.lowlevel.checkpoint()
        yield b"x\n" * 1000


def test_run_rg_fed_searches_what_it_is_fed(tmp_path: Path) -> None:
    seen = bytearray()

    def consume(chunk: bytes | bytearray) -> bool:
        seen.extend(chunk)
        return False

    async def main() -> Any:
        return await LocalFileOperations().run_rg_fed(
            ["--line-number", "--", "x", "-"], str(tmp_path), _chunks(b"ax\nb", b"\nx"), consume
        )

    output = trio.run(main)
    assert (output.exit_code, output.stdout, output.truncated) == (0, b"", False)
    assert bytes(seen) == b"1:ax\n3:x\n"


def test_run_rg_fed_stops_when_consume_says_so(tmp_path: Path) -> None:
    """An endless feed: ripgrep is killed at the first output consume stops at."""
    calls: list[int] = []

    def consume(chunk: bytes | bytearray) -> bool:
        calls.append(len(chunk))
        return True

    async def main() -> Any:
        async with aclosing(_chunks(endless=True)) as feed:
            return await LocalFileOperations().run_rg_fed(
                ["--", "x", "-"], str(tmp_path), feed, consume
            )

    output = trio.run(main)
    assert (output.exit_code, output.truncated, len(calls)) == (0, True, 1)


def test_run_rg_fed_passes_on_the_feeds_error(tmp_path: Path) -> None:
    async def failing() -> Any:
        yield b"x\n"
        raise ValueError("no more")

    async def main() -> Any:
        return await LocalFileOperations().run_rg_fed(
            ["--", "x", "-"], str(tmp_path), failing(), lambda chunk: False
        )

    with pytest.raises(ValueError, match="no more"):
        trio.run(main)


def test_run_rg_fed_is_not_offered_when_a_subclass_changes_run_rg(tmp_path: Path) -> None:
    class Wrapped(LocalFileOperations):
        async def run_rg(self, args: Any, cwd: str) -> Any:
            return await super().run_rg(args, cwd)

    async def main() -> Any:
        return await Wrapped().run_rg_fed(
            ["--", "x", "-"], str(tmp_path), _chunks(b"x\n"), lambda chunk: False
        )

    assert trio.run(main) is None
