"""Terminal safety: the one way ``pi`` writes text for a person.

Everything ``pi`` prints for a person (the rendered output of ``pi run``, ``pi call``,
``pi replay``, ``pi replay --verify``, ``pi tools``, ``pi plugins``, and its messages on stderr)
passes :func:`sanitise`, which makes every control and escape character of untrusted text (tool
output, file names, arguments, model text, plugin error messages) visible instead of letting the
terminal act on it; only pi's own styling (rich styles, applied after sanitising) reaches the
terminal as escape sequences. JSON output is not sanitised: ``json.dumps`` escapes C0 controls,
and :func:`~pi_core._cli.output.json_text` escapes DEL, C1 controls and bidi controls
(``\\u009b``), so no raw control character is ever written.

What :func:`sanitise` does (newlines and tabs stay):

===============================================  ============================================
character                                        shown as
===============================================  ============================================
``\\r\\n``                                          ``\\n`` (what a terminal shows anyway)
C0 controls U+0000–U+001F but ``\\t`` and ``\\n``   its control picture U+2400 + code: ESC ``␛``,
                                                 BEL ``␇``, a lone CR ``␍``, NUL ``␀``, BS ``␈``
DEL U+007F                                       ``␡``
C1 controls U+0080–U+009F                        ``␛`` and the 7-bit equivalent (code − 0x40):
                                                 U+009B (CSI) ``␛[``, U+009D (OSC) ``␛]``
bidi controls U+061C, U+200E, U+200F,            ``<U+202E>`` (its code point)
U+202A–U+202E, U+2066–U+2069
===============================================  ============================================

So ``\\x1b[2J`` prints as ``␛[2J`` and an OSC 52 clipboard write ``\\x1b]52;c;aGVsbG8=\\x07`` as
``␛]52;c;aGVsbG8=␇``: the sequence is visible and inert.

Styling: only when ``NO_COLOR`` is unset or empty and the stream is a terminal, or
``FORCE_COLOR`` is set non-empty (:func:`wants_styling`); otherwise not one escape byte is
written.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""The bidirectional formatting characters that can make text read differently from what it
is (Trojan Source): ALM, LRM, RLM, LRE..RLO, LRI..PDI."""


def _table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if chr(code) not in "\t\n":
            table[code] = chr(0x2400 + code)
    table[0x7F] = "\u2421"
    for code in range(0x80, 0xA0):
        table[code] = "\u241b" + chr(code - 0x40)
    for code in BIDI_CONTROLS:
        table[code] = f"<U+{code:04X}>"
    return table


_REPLACEMENTS = _table()


def sanitise(text: str) -> str:
    """``text`` with every control and escape character made visible (module docstring)."""
    return text.replace("\r\n", "\n").translate(_REPLACEMENTS)


def is_terminal(file: Any) -> bool:
    """Whether ``file`` is a terminal (``isatty()``)."""
    isatty = getattr(file, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


def wants_styling(file: Any) -> bool:
    """Styled output: ``NO_COLOR`` is unset or empty, and ``file`` is a terminal or
    ``FORCE_COLOR`` is set to a non-empty value (https://force-color.org; ``NO_COLOR`` wins
    when both are set)."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or is_terminal(file)


class TerminalWriter:
    """Writes sanitised text to ``file``, styled with rich when ``styled`` (default:
    :func:`wants_styling`), plain otherwise. The only writer of pi's human output."""

    def __init__(self, file: IO[str], *, styled: bool | None = None) -> None:
        self.file = file
        self.styled = wants_styling(file) if styled is None else styled
        self.console: Console | None = None
        if self.styled:  # rich is imported only when it is used (start-up time of JSON output)
            from rich.console import Console

            self.console = Console(
                file=file,
                force_terminal=True,
                highlight=False,
                soft_wrap=True,
                emoji=False,
                markup=False,
            )

    def text(self, *pieces: tuple[str, str]) -> Text:
        """A rich ``Text`` of ``(text, style)`` pieces, each sanitised before it is styled."""
        from rich.text import Text

        result = Text()
        for text, style in pieces:
            result.append(sanitise(text), style=style or None)
        return result

    def write(self, text: str, style: str = "") -> None:
        """``text`` (sanitised), in ``style`` when styled; no newline added."""
        self.pieces((text, style))

    def pieces(self, *pieces: tuple[str, str]) -> None:
        """Each ``(text, style)`` piece in turn (sanitised, styled when styled)."""
        if self.console is None:
            self.file.write("".join(sanitise(text) for text, _ in pieces))
        else:
            self.console.print(self.text(*pieces), end="")

    def table(self, headers: list[str], rows: list[list[str]]) -> None:
        """A table: rich's borderless table when styled, else columns padded with two spaces
        (the last column not padded)."""
        rows = [[sanitise(cell) for cell in row] for row in rows]
        if self.console is None:
            last = len(headers) - 1
            widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(last)]
            for row in [headers, *rows]:
                cells = [row[i].ljust(widths[i]) for i in range(last)]
                self.file.write("  ".join([*cells, row[last]]) + "\n")
            return
        from rich.table import Table

        table = Table(show_edge=False, box=None, header_style="bold")
        for name in headers:
            table.add_column(name)
        for row in rows:
            table.add_row(*(self.text((cell, "")) for cell in row))
        self.console.print(table)

    def flush(self) -> None:
        self.file.flush()


class SanitisedStream:
    """A text stream that sanitises what is written to ``inner`` (pi's stderr: error lines,
    plugin failure reports, tracebacks)."""

    def __init__(self, inner: IO[str]) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(sanitise(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return is_terminal(self.inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


__all__ = [
    "BIDI_CONTROLS",
    "SanitisedStream",
    "TerminalWriter",
    "is_terminal",
    "sanitise",
    "wants_styling",
]
