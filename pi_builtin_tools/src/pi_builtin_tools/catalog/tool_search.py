"""The ``tool_search`` tool (Pi 1.6's ``extensions/tool-search``): BM25 over the metadata of the
tools that are registered but not declared to the model (exposure ``codemode`` or ``deferred``),
loading the matches for the next model call.

Registered inactive (``default_active=False``) and ``model-only``: ``pi replay --tool-search``
or ``pi run --tools ...,tool_search`` activates it. It reaches the session's tool sets through its
execute context (``ctx.session.tools``, a :class:`pi_core.ToolSet`); activation goes through
the active set, so the loop announces the loaded tools with a system message (``toolsAdded``)
before the next request.

Ranking (:class:`Bm25Ranker`, as Pi's): Okapi BM25 (``k1`` 1.2, ``b`` 0.75) over the
description text (the description, then the parameter schema's descriptions and property names),
with the name (weight 3 per matched term's IDF) and the namespace's name, description and
instructions (weight 0.5) as extra fields; a tool whose whole local name (after the last ``__``)
is in the query gets a bonus of the sum of the query terms' IDFs. Order: a query that is exactly
a tool's name first, then more query terms covered, then score; ties keep registration order.

Tokens (:func:`tokenize`): NFC, camelCase split (``readFile`` → ``read file``), lowercase,
every run of characters that are not letters, marks or digits is a separator, the 21 English stop
words of Pi's list (:data:`STOP_WORDS`) dropped, and a naive singular for ASCII words (``ies`` →
``y``, ``ches``/``shes``/``sses``/``xes``/``zes`` lose ``es``, a final ``s`` goes unless ``ss``).
Pi segments text written without spaces (Chinese) with ``Intl.Segmenter``; here such text is
split at separators only.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pi_builtin_tools.catalog.definitions import (
    DEFAULT_TOOL_SEARCH_LIMIT,
    TOOL_SEARCH_DESCRIPTION,
    TOOL_SEARCH_PARAMETERS,
    TOOL_SEARCH_TOOL_NAME,
    create_tool_search_tool_definition,
)
from pi_core import AgentToolResult, TextContent, ToolError

EMPTY_QUERY_TEXT = "query must not be empty"
BAD_LIMIT_TEXT = "limit must be a positive integer"
NO_MATCH_TEXT = "No matching tools found."

STOP_WORDS = frozenset(
    "a an and are as at be by for from in is it of on or that the this to with".split()
)
"""Pi's English stop words (21, the common core of the usual lists)."""

NAME_WEIGHT = 3.0
NAMESPACE_WEIGHT = 0.5

_ASCII_WORD = re.compile(r"^[a-z0-9]+$")
_PLAIN = re.compile(r"^[a-z0-9 ]*$")
_ES_PLURAL = re.compile(r"(ches|shes|sses|xes|zes)$")


def stem(term: str) -> str:
    """Naive singular form, so ``issues`` matches ``issue`` and ``searches`` ``search``."""
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if len(term) > 4 and _ES_PLURAL.search(term):
        return term[:-2]
    if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


def _word_chars_only(text: str) -> str:
    out: list[str] = []
    separator = False
    for char in text:
        if unicodedata.category(char)[0] in "LMN":
            out.append(char)
            separator = False
        elif not separator:
            out.append(" ")
            separator = True
    return "".join(out)


def tokenize(text: str) -> list[str]:
    """The search terms of ``text`` (see the module docstring)."""
    normalized = unicodedata.normalize("NFC", text)
    normalized = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", normalized)
    normalized = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", normalized)
    normalized = _word_chars_only(normalized.lower())
    words = normalized.split(" ") if _PLAIN.match(normalized) else normalized.split()
    return [
        stem(word) if _ASCII_WORD.match(word) else word
        for word in words
        if word and word not in STOP_WORDS
    ]


def _resolve_ref(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        return None
    target = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def _schema_text(schema: Any, root: Any, parts: list[str], seen: list[Any]) -> None:
    """Schema descriptions and property names, recursively, following local ``$ref``s once."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve_ref(ref, root)
        if isinstance(target, dict) and not any(target is s for s in seen):
            seen.append(target)
            _schema_text(target, root, parts, seen)
    if isinstance(schema.get("description"), str):
        parts.append(schema["description"])
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, prop in properties.items():
            parts.append(name)
            _schema_text(prop, root, parts, seen)
    _schema_text(schema.get("items"), root, parts, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            for variant in variants:
                _schema_text(variant, root, parts, seen)


@dataclass(frozen=True)
class SearchDocument:
    """What the ranker reads of one tool: its ``name``, the description ``text`` and the
    ``namespace_text``."""

    name: str
    text: str
    namespace_text: str = ""


def search_document(tool: Any, namespace: Any = None) -> SearchDocument:
    """The :class:`SearchDocument` of a tool (anything with ``name``, ``description``,
    ``parameters``) and its namespace (``name``, ``description``, ``instructions``)."""
    parts = [tool.description]
    _schema_text(tool.parameters, tool.parameters, parts, [tool.parameters])
    namespace_text = ""
    if namespace is not None:
        namespace_text = " ".join(
            [namespace.name, namespace.description or "", namespace.instructions or ""]
        )
    text = " ".join(p for p in parts if p.strip())
    return SearchDocument(tool.name, text, namespace_text)


def _normalize_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_$]", "_", name.strip().lower())


def _is_exact_name_query(query: str, name: str) -> bool:
    normalized = _normalize_name(name)
    return normalized == query or normalized.endswith(f"__{query}")


@dataclass
class _Indexed:
    name: str
    name_terms: set[str]
    local_name_terms: list[str]
    text_counts: dict[str, int]
    text_length: int
    namespace_terms: set[str]


def _index(document: SearchDocument) -> _Indexed:
    counts: dict[str, int] = {}
    for term in tokenize(document.text):
        counts[term] = counts.get(term, 0) + 1
    local = document.name.split("__")[-1]
    return _Indexed(
        name=document.name,
        name_terms=set(tokenize(document.name)),
        local_name_terms=list(dict.fromkeys(tokenize(local))),
        text_counts=counts,
        text_length=sum(counts.values()),
        namespace_terms=set(tokenize(document.namespace_text)),
    )


@dataclass
class Bm25Ranker:
    """Pi's ranker (see the module docstring); :meth:`rank` returns ``(name, score)`` pairs."""

    k1: float = 1.2
    b: float = 0.75

    def rank(
        self, query: str, documents: Sequence[SearchDocument], limit: int
    ) -> list[tuple[str, float]]:
        query_terms = list(dict.fromkeys(tokenize(query)))
        if not query_terms or not documents or limit <= 0:
            return []
        indexed = [_index(d) for d in documents]
        average = sum(d.text_length for d in indexed) / len(indexed) or 1
        idf: dict[str, float] = {}
        for term in query_terms:
            frequency = sum(
                1
                for d in indexed
                if term in d.name_terms or term in d.text_counts or term in d.namespace_terms
            )
            idf[term] = math.log(1 + (len(indexed) - frequency + 0.5) / (frequency + 0.5))
        full_name_bonus = sum(idf.values())
        exact_query = _normalize_name(query)
        matches: list[tuple[bool, int, float, int, str]] = []
        for position, d in enumerate(indexed):
            norm = self.k1 * (1 - self.b + self.b * d.text_length / average)
            score = 0.0
            covered = 0
            for term in query_terms:
                count = d.text_counts.get(term, 0)
                weight = (
                    (NAME_WEIGHT if term in d.name_terms else 0)
                    + (NAMESPACE_WEIGHT if term in d.namespace_terms else 0)
                    + (count * (self.k1 + 1)) / (count + norm)
                )
                if weight > 0:
                    covered += 1
                score += idf[term] * weight
            if score == 0:
                continue
            terms = set(query_terms)
            if d.local_name_terms and all(t in terms for t in d.local_name_terms):
                score += full_name_bonus
            exact = _is_exact_name_query(exact_query, d.name)
            matches.append((exact, covered, score, position, d.name))
        matches.sort(key=lambda m: (not m[0], -m[1], -m[2], m[3]))
        return [(name, score) for _, _, score, _, name in matches[:limit]]


def _searchable(exposure: str) -> bool:
    return exposure in ("codemode", "deferred")


def search_and_load(tool_set: Any, query: str, limit: int) -> list[tuple[str, str]]:
    """Rank the ``codemode``/``deferred`` tools of ``tool_set`` that are not active, activate
    the matches and return ``(name, description)`` of each."""
    active = tool_set.active_names
    candidates = [
        t
        for t in tool_set.registered
        if _searchable(tool_set.exposure(t.name)) and t.name not in active
    ]
    documents = [search_document(t, tool_set.namespace(t.name)) for t in candidates]
    matches = Bm25Ranker().rank(query, documents, limit)
    if matches:
        tool_set.set_active([*active, *(name for name, _ in matches)])
    by_name = {t.name: t for t in candidates}
    return [(name, by_name[name].description) for name, _ in matches]


def _is_positive_integer(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and float(value).is_integer() and value > 0


def _first_line(text: str) -> str:
    return re.split(r"\r?\n", text.strip())[0]


def result_text(loaded: list[tuple[str, str]]) -> str:
    """``No matching tools found.`` or ``Loaded N tool(s). ...`` with one line per tool."""
    if not loaded:
        return NO_MATCH_TEXT
    lines = "\n".join(f"- {name}: {_first_line(description)}" for name, description in loaded)
    plural = "" if len(loaded) == 1 else "s"
    return f"Loaded {len(loaded)} tool{plural}. They are available from your next call:\n{lines}"


async def execute_tool_search(
    tool_call_id: str, params: Any, on_update: Any, ctx: Any
) -> AgentToolResult:
    """Search and load (the ``tool_search`` tool's ``execute``)."""
    query = params.get("query", "")
    if query.strip() == "":
        raise ToolError(EMPTY_QUERY_TEXT)
    limit = params.get("limit")
    limit = DEFAULT_TOOL_SEARCH_LIMIT if limit is None else limit
    if not _is_positive_integer(limit):
        raise ToolError(BAD_LIMIT_TEXT)
    session = getattr(ctx, "session", None)
    tool_set = getattr(session, "tools", None)
    loaded = search_and_load(tool_set, query, int(limit)) if tool_set is not None else []
    return AgentToolResult(
        content=[TextContent(text=result_text(loaded))],
        details={"loaded": [name for name, _ in loaded]},
    )


__all__ = [
    "BAD_LIMIT_TEXT",
    "DEFAULT_TOOL_SEARCH_LIMIT",
    "EMPTY_QUERY_TEXT",
    "NO_MATCH_TEXT",
    "STOP_WORDS",
    "TOOL_SEARCH_DESCRIPTION",
    "TOOL_SEARCH_PARAMETERS",
    "TOOL_SEARCH_TOOL_NAME",
    "Bm25Ranker",
    "SearchDocument",
    "create_tool_search_tool_definition",
    "execute_tool_search",
    "result_text",
    "search_and_load",
    "search_document",
    "stem",
    "tokenize",
]
