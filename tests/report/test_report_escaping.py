"""What the report page embeds (no browser): any session text, as JSON inside the page, can
neither close its element nor open markup, and reaches the page without control characters."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from pi_core._report.html import json_for_script, render_html
from pi_core._report.model import visible

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_script_json_has_no_markup_and_round_trips(text: str) -> None:
    value = {"k": visible(text), "list": [visible(text)]}
    embedded = json_for_script(value)
    assert not set(embedded) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(embedded) == value


@given(st.text())
def test_visible_leaves_no_control_character_and_keeps_lines(text: str) -> None:
    shown = visible(text)
    assert CONTROL.search(shown) is None
    assert shown.count("\n") == text.replace("\r\n", "\n").count("\n")
    shown.encode("utf-8")  # no lone surrogate left


def test_visible_signs() -> None:
    assert visible("\x1b[31mred\x1b[0m\r\n\ttab\rcr\x00\x7f\u202e") == (
        "␛[31mred␛[0m\n\ttab␍cr␀␡<U+202E>"
    )


def test_the_page_has_one_policy_and_no_session_text_outside_the_data() -> None:
    page = render_html({"title": "</script><script>x()</script>", "items": []})
    assert page.count('http-equiv="Content-Security-Policy"') == 1
    policy = re.search(r'content="(default-src [^"]+)"', page)
    assert policy is not None
    assert policy.group(1).startswith("default-src 'none'; script-src 'sha256-")
    assert "img-src data:" in policy.group(1)
    assert "</script><script>x()" not in page
    assert "\\u003c/script\\u003e\\u003cscript\\u003ex()" in page
