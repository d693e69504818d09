"""The HTML session report: one self-contained file (inline CSS and JavaScript, no request of
any kind) that renders the report data of :mod:`pi_core._report.model`.

How nothing from the session can act on the page:

* the data is one ``<script type="application/json">`` element; in its JSON every ``<``,
  ``>`` and ``&`` is a ``\\u`` escape, so no text of the session can close the element or open
  a tag, a comment or CDATA;
* the page's script puts the session's strings into the document only as text
  (``textContent``), never as markup, attribute names, URLs (images are ``data:`` URLs of a
  checked image type and base64 payload) or links;
* a Content-Security-Policy (``default-src 'none'``) lets only the page's own script and style
  (by their SHA-256) run and images from ``data:`` load: were anything to slip through, it
  would neither run nor reach the network.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

_ASSETS = resources.files("pi_core._report") / "assets"


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def json_for_script(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script type="application/json">`` element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_html(report: dict[str, Any]) -> str:
    """The report page of ``report`` (a :func:`~pi_core._report.model.build_report` dict)."""
    css = (_ASSETS / "report.css").read_text(encoding="utf-8")
    script = (_ASSETS / "report.js").read_text(encoding="utf-8")
    policy = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>pi session report</title>\n"
        f"<style>{css}</style>\n</head>\n<body>\n"
        f'<script type="application/json" id="pi-data">{json_for_script(report)}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def write_report(report: dict[str, Any], path: str | Path) -> None:
    """Write the page of ``report`` to ``path`` (UTF-8)."""
    Path(path).write_text(render_html(report), encoding="utf-8")


__all__ = ["json_for_script", "render_html", "write_report"]
