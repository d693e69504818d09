"""What ``pi`` prints when it is not asked for JSON (DESIGN §5).

On a terminal the output is styled with rich (tool call header in bold, errors in red); when
stdout is not a terminal it is plain text, exactly as below, so it can be piped and tested.

A tool result of ``pi replay``::

    echo {"value":"x"}            header: tool name and the call's raw arguments (compact JSON)
    x                             the result's text blocks, each ending in a newline

    nope {} [error]               an error result is marked in the header
    Tool nope not found

Results are separated by an empty line; an image block prints as ``[image image/png, 1.3KB]``.
``pi call`` prints the header only on a terminal: its plain output is the result's content
alone (``isError`` is the exit status).

``pi tools``: one paragraph per tool::

    echo [parallel]
      Echo a value back.
      parameters: {"type":"object",...}

``pi plugins``: a table with the columns ``name``, ``distribution``, ``version``, ``hooks``
(``-`` where a plugin has no distribution or version).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from pi_core.messages import ImageContent, TextContent, ToolResultMessage

if TYPE_CHECKING:
    from rich.console import Console


def format_size(n: int) -> str:
    """Pi's ``formatSize``: ``512B``, ``1.3KB``, ``2.0MB`` (one decimal, half up)."""
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{_half_up(n / 1024)}KB"
    return f"{_half_up(n / (1024 * 1024))}MB"


def _half_up(value: float) -> str:
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def compact_json(value: Any) -> str:
    """One-line JSON, non-ASCII kept (``{"a":1}``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _image_label(block: ImageContent) -> str:
    try:
        size = len(base64.b64decode(block.data, validate=False))
    except (binascii.Error, ValueError):
        size = len(block.data)
    return f"[image {block.mime_type}, {format_size(size)}]"


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


class Renderer:
    """Writes human-readable output to ``file``: rich styling when ``styled`` (default: when
    ``file`` is a terminal), plain text otherwise."""

    def __init__(self, file: IO[str], *, styled: bool | None = None) -> None:
        self.file = file
        if styled is None:
            isatty = getattr(file, "isatty", None)
            styled = bool(isatty and isatty())
        self.styled = styled
        self.console: Console | None = None
        if styled:  # rich is imported only when it is used (start-up time of JSON output)
            from rich.console import Console

            self.console = Console(
                file=file,
                force_terminal=True,
                highlight=False,
                soft_wrap=True,
                emoji=False,
                markup=False,
            )
        self._results = 0

    # -- tool results ----------------------------------------------------------------------

    def call_result(self, message: ToolResultMessage, arguments: Any = None) -> None:
        """``pi call``: on a terminal the result with its call header; in plain text only the
        result's content (what the model sees), so ``pi call ... > file`` keeps just that
        (``isError`` is the exit status)."""
        self.tool_result(message, arguments, header=self.styled)

    def tool_result(
        self, message: ToolResultMessage, arguments: Any = None, *, header: bool = True
    ) -> None:
        """Print one tool result, after its call header unless ``header`` is false
        (``arguments``: the call's raw arguments; ``None`` when unknown)."""
        if self._results:
            self._write("\n")
        self._results += 1
        header_args = "" if arguments is None else " " + compact_json(arguments)
        if self.console is None:
            mark = " [error]" if message.is_error else ""
            if header:
                self._write(f"{message.tool_name}{header_args}{mark}\n")
            for block in message.content:
                if isinstance(block, TextContent):
                    self._write(_with_newline(block.text))
                else:
                    self._write(_image_label(block) + "\n")
            self.file.flush()
            return
        from rich.text import Text

        if header:
            title = Text()
            title.append(message.tool_name, style="bold red" if message.is_error else "bold cyan")
            title.append(header_args, style="dim")
            if message.is_error:
                title.append(" [error]", style="bold red")
            self.console.print(title)
        for block in message.content:
            if isinstance(block, TextContent):
                body = block.text[:-1] if block.text.endswith("\n") else block.text
                self.console.print(Text(body, style="red" if message.is_error else ""))
            else:
                self.console.print(Text(_image_label(block), style="magenta"))
        self.file.flush()

    # -- pi tools ----------------------------------------------------------------------------

    def tools(self, tools: Sequence[dict[str, Any]]) -> None:
        """Print tool descriptions; each item has the keys of ``pi tools --json``."""
        if not tools:
            self._write("no tools registered\n")
            return
        for index, info in enumerate(tools):
            if index:
                self._write("\n")
            description = info["description"].strip("\n")
            parameters = compact_json(info["parameters"])
            if self.console is None:
                self._write(f"{info['name']} [{info['executionMode']}]\n")
                for line in description.splitlines():
                    self._write(f"  {line}\n" if line else "\n")
                self._write(f"  parameters: {parameters}\n")
                continue
            from rich.text import Text

            title = Text(info["name"], style="bold cyan")
            title.append(f" [{info['executionMode']}]", style="dim")
            self.console.print(title)
            for line in description.splitlines():
                self.console.print(Text("  " + line if line else ""))
            params = Text("  parameters: ", style="dim")
            params.append(parameters)
            self.console.print(params)

    # -- pi plugins --------------------------------------------------------------------------

    def plugins(self, plugins: Sequence[dict[str, Any]]) -> None:
        """Print the plugin table; each item has the keys of ``pi plugins --json``."""
        if not plugins:
            self._write("no plugins loaded\n")
            return
        rows = [
            [
                p["name"],
                p.get("distribution") or "-",
                p.get("version") or "-",
                ", ".join(p.get("hooks") or []) or "-",
            ]
            for p in plugins
        ]
        headers = ["name", "distribution", "version", "hooks"]
        if self.console is None:
            widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(3)]
            for row in [headers, *rows]:
                cells = [row[i].ljust(widths[i]) for i in range(3)]
                self._write("  ".join([*cells, row[3]]) + "\n")
            return
        from rich.table import Table

        table = Table(show_edge=False, box=None, header_style="bold")
        for name in headers:
            table.add_column(name)
        for row in rows:
            table.add_row(*row)
        self.console.print(table)

    def _write(self, text: str) -> None:
        self.file.write(text)


__all__ = ["Renderer", "compact_json", "format_size"]
