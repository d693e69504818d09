"""Writing compact JSON text: :func:`dump_json`, ``json.dumps(value, ensure_ascii=False,
separators=(",", ":"))`` to the character, through pydantic's serializer where that gives the
same text (a tool's text result is escaped in about a third of the instructions).

pydantic's serializer writes ``dict`` (``str`` keys), ``list``, ``str``, ``int`` (of 64 bits
and a little more), ``bool`` and ``None`` exactly as ``json.dumps`` does (every code point as a
value and as a key: ``tests/core/test_per_call_fast_paths.py``), but not floats (``0.00001``
against ``1e-05``), subclasses, tuples, other keys, lone surrogates or integers too long for
``str``: any of those takes ``json.dumps`` for the whole value.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

_MAX_DEPTH = 64
"""Deeper values take ``json.dumps`` (its recursion errors are its own)."""

_INT_BOUND = 1 << 64


def _plain(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_INT_BOUND < value < _INT_BOUND
    if depth >= _MAX_DEPTH:
        return False
    if kind is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    if kind is list:
        return all(_plain(v, depth + 1) for v in value)
    return False


def dump_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``: the same text, or
    the same exception."""
    if _plain(value, 0):
        try:
            return pydantic_core.to_json(value).decode()
        except pydantic_core.PydanticSerializationError:  # a lone surrogate
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


__all__ = ["dump_json"]
