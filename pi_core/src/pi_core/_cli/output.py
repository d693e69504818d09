"""JSON output of ``pi``: UTF-8 text, non-ASCII kept, flushed line by line (a reader such as
``../cases/run.py`` sees every finished line even if the run is killed later)."""

from __future__ import annotations

import json
from typing import IO, Any


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON: compact (``{"a":1}``) without ``indent``; non-ASCII characters kept,
    except when the text holds lone surrogates (not encodable as UTF-8), which are escaped."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, ensure_ascii=False, separators=separators, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, separators=separators, indent=indent)
    return text


def write_json_line(out: IO[str], value: Any) -> None:
    """One compact JSON line, flushed."""
    out.write(json_text(value) + "\n")
    out.flush()


def write_json(out: IO[str], value: Any) -> None:
    """A JSON document indented by two spaces (``pi plugins --json``, ``pi tools --json``)."""
    out.write(json_text(value, indent=2) + "\n")
    out.flush()


__all__ = ["json_text", "write_json", "write_json_line"]
