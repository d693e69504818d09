"""Base model for everything that crosses the wire: camelCase JSON, unset fields omitted.

Pi's JSON leaves undefined fields out (a small ``read`` result has no ``details`` key); a field
set to ``None`` explicitly is kept as ``null`` only when the model says so through ``KEEP_NONE``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from pi_core._entry_scan import seed_pydantic_plugins

seed_pydantic_plugins()  # before the first model: pydantic looks for its plugins then


def empty_list() -> list[Any]:
    """``[]``: the default factory of the list fields of wire models (``Field(default_factory=
    empty_list)``, not ``list``). pydantic reads the signature of every default factory when it
    builds a model. The builtin ``list`` has only a text signature, which :mod:`inspect` parses
    with :mod:`tokenize` and :mod:`ast` (the first time also compiling tokenize's regular
    expressions): 17 million instructions for the five fields, about 1% of the start-up of
    ``pi``. A Python function's signature is read from its code object."""
    return []


class WireModel(BaseModel):
    """A pydantic model whose JSON uses Pi's camelCase names and omits unset optional fields.

    ``extra="allow"`` keeps fields this port does not model (a session line's ``api``,
    ``diagnostics``, ...) so a parsed line serialises back with the same structure.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
    )

    #: field names whose ``None`` value is written as ``null`` instead of being left out
    KEEP_NONE: ClassVar[frozenset[str]] = frozenset()

    def to_json_dict(self, *, exclude_unset: bool = False) -> dict[str, Any]:
        """The JSON object Pi would write: camelCase keys, no ``null`` for unset optionals.

        ``exclude_unset=True`` also leaves out defaults that were never set (a parsed session
        line serialises back with exactly the keys it had).
        """
        data = self.model_dump(by_alias=True, mode="json", exclude_unset=exclude_unset)
        return _strip_none(data, self)

    def to_json(self, *, exclude_unset: bool = False) -> str:
        """Compact JSON text of :meth:`to_json_dict`."""
        return json.dumps(
            self.to_json_dict(exclude_unset=exclude_unset),
            ensure_ascii=False,
            separators=(",", ":"),
        )


def _strip_none(data: dict[str, Any], model: BaseModel) -> dict[str, Any]:
    """Drop top-level ``None`` fields of ``model`` (recursively through nested models)."""
    keep: frozenset[str] = getattr(model, "KEEP_NONE", frozenset())
    out: dict[str, Any] = {}
    fields = type(model).model_fields
    for name, info in fields.items():
        key = info.alias or name
        if key not in data:
            continue
        value = getattr(model, name)
        if value is None and name not in keep:
            continue
        out[key] = _strip_value(data[key], value)
    extra = model.__pydantic_extra__ or {}
    for key in extra:
        if key in data:
            out[key] = data[key]
    return out


def _strip_value(data: Any, value: Any) -> Any:
    if isinstance(value, BaseModel) and isinstance(data, dict):
        return _strip_none(data, value)
    if isinstance(value, list) and isinstance(data, list):
        return [_strip_value(d, v) for d, v in zip(data, value, strict=False)]
    return data
