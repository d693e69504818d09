"""JSON output of ``pi``: UTF-8 text, non-ASCII kept, flushed line by line (a reader such as
``../cases/run.py`` sees every finished line even if the run is killed later)."""

from __future__ import annotations

import json
import re
from typing import IO, Any

from pi_core._cli.terminal import BIDI_CONTROLS
from pi_core._wire.json_dump import dump_json

_RAW_CONTROLS = re.compile("[\u007f-\u009f" + "".join(chr(c) for c in BIDI_CONTROLS) + "]")


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON: compact (``{"a":1}``) without ``indent``; non-ASCII characters kept,
    except when the text holds lone surrogates (not encodable as UTF-8), which are escaped.

    No control character is written raw: ``json.dumps`` escapes C0 controls (``\\u001b``),
    and DEL, C1 controls and bidi controls are escaped here (``\\u009b``, ``\\u202e``): the
    same JSON value, safe on a terminal."""
    separators = (",", ":") if indent is None else (",", ": ")
    if indent is None:
        text = dump_json(value)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=separators, indent=indent)
    if text.isascii():  # O(1): no surrogate, and DEL is the only such character possible
        if "\x7f" not in text:
            return text
    else:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, ensure_ascii=True, separators=separators, indent=indent)
    # outside strings JSON holds no such character, so each one found is inside a string
    return _RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json_line(out: IO[str], value: Any) -> None:
    """One compact JSON line, flushed."""
    out.write(json_text(value) + "\n")
    out.flush()


def write_json(out: IO[str], value: Any) -> None:
    """A JSON document indented by two spaces (``pi plugins --json``, ``pi tools --json``)."""
    out.write(json_text(value, indent=2) + "\n")
    out.flush()


__all__ = ["json_text", "write_json", "write_json_line"]
