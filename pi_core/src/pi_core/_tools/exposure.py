"""Tool exposure and a session's three tool sets: registered, active, callable (Pi 1.6).

* **registered**: every tool the plugins registered, in registration order.
* **active**: the tools declared to the model, in a stable order: on a change, the tools that
  stay keep their position and new ones are appended. Only registered tools whose exposure is
  not ``hidden`` can be active. The model calling a registered but inactive tool gets
  ``Tool <name> not found``.
* **callable** (what a tool's nested calls may reach): registered tools whose exposure is
  ``codemode`` or ``deferred``, or ``direct`` and active; in registration order.

Exposure levels (:data:`~pi_core._tools.definition.ToolExposure`, ``AgentTool.exposure``, default ``"direct"``):

============  =====================  ====================  ===========================
exposure      active at the start    declared to the model  callable by nested calls
============  =====================  ====================  ===========================
direct        yes (``default_active``)  while active       while active
model-only    yes (``default_active``)  while active       never
codemode      no; may be activated   only if activated      always
deferred      no; ``tool_search``    only if activated      always
hidden        never                  never                  never
============  =====================  ====================  ===========================

:class:`ToolSet` holds the three sets of one session; :meth:`ToolSet.declarations` is what the
model sees (the loadout projection: each active tool's ``prepare_loadout`` may replace
descriptions and hide declarations).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pydantic

from pi_core._config import config_file, format_config_error
from pi_core._errors import ConfigError
from pi_core._tools.definition import (
    EXPOSURE_LEVELS,
    AgentTool,
    ToolExposure,
    ToolLoadout,
    ToolNamespace,
)

_ACTIVE_AT_START = ("direct", "model-only")
_ALWAYS_CALLABLE = ("codemode", "deferred")


def tool_declaration(tool: Any, description: str | None = None) -> dict[str, Any]:
    """Pi's ``toToolDeclaration``: ``{name, description, parameters, constrainedSampling?}``
    as the model gets it (``parameters`` through a JSON round trip)."""
    declaration: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description if description is None else description,
        "parameters": json.loads(json.dumps(tool.parameters)),
    }
    constrained = getattr(tool, "constrained_sampling", None)
    if constrained is not None and constrained is not False:  # False: none declared
        declaration["constrainedSampling"] = constrained
    return declaration


class ToolSet:
    """The registered, active and callable tools of one session.

    ``exposures`` overrides a tool's own ``exposure`` by name (``[tools.NAME] exposure`` in
    ``pi.toml``, ``pi replay --exposure``). ``active`` names the tools active at the start
    (default: every ``direct``/``model-only`` tool whose ``default_active`` is true).
    ``on_error(tool_name, exc)`` receives a ``prepare_loadout`` that raised (the hook is then
    ignored).
    """

    def __init__(
        self,
        tools: Iterable[AgentTool],
        exposures: Mapping[str, ToolExposure] | None = None,
        active: Sequence[str] | None = None,
        *,
        on_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self._registered: list[AgentTool] = list(tools)
        self._by_name = {t.name: t for t in self._registered}
        self._exposures: dict[str, ToolExposure] = dict(exposures or {})
        self._active: list[str] = []
        self._descriptions: dict[str, str] = {}
        self._hidden: set[str] = set()
        self.on_error = on_error
        self.set_active(self.default_active_names() if active is None else active)

    # -- the three sets -------------------------------------------------------------------

    @property
    def registered(self) -> list[AgentTool]:
        """Every registered tool, in registration order."""
        return list(self._registered)

    def get(self, name: str) -> AgentTool | None:
        """The registered tool ``name`` (``None`` when there is none)."""
        return self._by_name.get(name)

    def exposure(self, name: str) -> ToolExposure:
        """The exposure of tool ``name``: the override, else the tool's own, else ``direct``."""
        if name in self._exposures:
            return self._exposures[name]
        tool = self._by_name.get(name)
        level: ToolExposure = getattr(tool, "exposure", "direct") if tool else "direct"
        return level

    def set_exposure(self, name: str, level: ToolExposure) -> None:
        """Override the exposure of ``name``; a tool that becomes ``hidden`` stops being
        active."""
        self._exposures[name] = level
        self.set_active(self.active_names)

    def set_exposures(self, exposures: Mapping[str, ToolExposure]) -> None:
        """Override several exposures, then make the default set active again (every
        ``direct``/``model-only`` tool whose ``default_active`` is true, plus the tools
        already active that stay activatable)."""
        self._exposures.update(exposures)
        keep = [n for n in self._active if self.exposure(n) not in ("codemode", "deferred")]
        self.set_active([*self.default_active_names(), *keep])

    def default_active_names(self) -> list[str]:
        """The tools active at the start: ``direct``/``model-only`` with ``default_active``."""
        return [
            t.name
            for t in self._registered
            if self.exposure(t.name) in _ACTIVE_AT_START and getattr(t, "default_active", True)
        ]

    def namespace(self, name: str) -> ToolNamespace | None:
        """The namespace of tool ``name`` (``None``: none)."""
        return getattr(self._by_name.get(name), "namespace", None)

    @property
    def active_names(self) -> list[str]:
        """The names of the active tools, in their stable order."""
        return list(self._active)

    @property
    def active(self) -> list[AgentTool]:
        """The active tools (what the model may call), in their stable order."""
        return [self._by_name[n] for n in self._active]

    def is_active(self, name: str) -> bool:
        return name in self._active

    def is_callable(self, name: str) -> bool:
        """Whether a nested call may reach ``name`` (see the module docstring)."""
        if name not in self._by_name:
            return False
        level = self.exposure(name)
        return level in _ALWAYS_CALLABLE or (level == "direct" and name in self._active)

    def callable_tools(self) -> list[AgentTool]:
        """The tools nested calls may reach, in registration order."""
        return [t for t in self._registered if self.is_callable(t.name)]

    def set_active(self, names: Iterable[str]) -> None:
        """Make ``names`` the active set (Pi's ``setActiveTools``): tools already active keep
        their position, new ones are appended in the given order; unknown and ``hidden``
        tools are left out. Each active tool's ``prepare_loadout`` then runs."""
        requested = list(dict.fromkeys(names))
        wanted = set(requested)
        kept = [n for n in self._active if n in wanted]
        order = list(dict.fromkeys([*kept, *requested]))
        self._active = [n for n in order if n in self._by_name and self.exposure(n) != "hidden"]
        self._prepare_loadout()

    def replace_active(self, names: Iterable[str]) -> None:
        """Make ``names`` the active set in exactly that order (the session's first
        selection, ``pi run --tools``: nothing was declared yet, so no order to keep)."""
        self._active = []
        self.set_active(names)

    def activate(self, names: Iterable[str]) -> None:
        """Append ``names`` to the active set (``set_active([*active, *names])``)."""
        self.set_active([*self._active, *names])

    # -- what the model sees --------------------------------------------------------------

    def _prepare_loadout(self) -> None:
        descriptions: dict[str, str] = {}
        hidden: set[str] = set()
        declared = self.active
        for tool in declared:
            prepare = getattr(tool, "prepare_loadout", None)
            if prepare is None:
                continue
            loadout = ToolLoadout(
                declared=declared,
                callable=self.callable_tools(),
                registered=self.registered,
                get_exposure=self.exposure,
                get_namespace=self.namespace,
                get_prompt_guidelines=self._prompt_guidelines,
            )
            try:
                changes = prepare(loadout)
            except Exception as exc:
                if self.on_error is not None:
                    self.on_error(tool.name, exc)
                continue
            if changes is None:
                continue
            descriptions.update(changes.descriptions)
            hidden.update(changes.hidden_declarations)
        self._descriptions = descriptions
        self._hidden = hidden

    def _prompt_guidelines(self, name: str) -> list[str]:
        definition = getattr(self._by_name.get(name), "definition", None)
        return list(getattr(definition, "prompt_guidelines", None) or [])

    def description(self, name: str) -> str:
        """The description the model sees for ``name`` (a loadout may replace it)."""
        if name in self._descriptions:
            return self._descriptions[name]
        tool = self._by_name.get(name)
        return tool.description if tool is not None else ""

    @property
    def hidden_declarations(self) -> list[str]:
        """Active tools whose declarations requests leave out (from ``prepare_loadout``)."""
        return [n for n in self._active if n in self._hidden]

    def declarations(self) -> list[dict[str, Any]]:
        """The declarations of the active tools, in order (:func:`tool_declaration`, with
        the loadout's descriptions)."""
        return [tool_declaration(t, self._descriptions.get(t.name)) for t in self.active]

    def model_tools(self) -> list[AgentTool]:
        """The active tools as the loop gets them: descriptions replaced by the loadout
        (copies), hidden declarations kept (the loop leaves them out of requests)."""
        tools: list[AgentTool] = []
        for tool in self.active:
            text = self._descriptions.get(tool.name)
            if text is not None and text != tool.description:
                tool = dataclasses.replace(tool, description=text)
            tools.append(tool)
        return tools

    def rows(self) -> list[dict[str, Any]]:
        """One ``{"name", "exposure", "active", "callable"}`` per registered tool."""
        return [
            {
                "name": t.name,
                "exposure": self.exposure(t.name),
                "active": self.is_active(t.name),
                "callable": self.is_callable(t.name),
            }
            for t in self._registered
        ]


def parse_exposure_list(text: str) -> dict[str, ToolExposure]:
    """``name=level,...`` (``pi replay --exposure``) as a dict; raises ``ValueError`` with a
    one-line message for a malformed pair or an unknown level."""
    result: dict[str, ToolExposure] = {}
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        name, sep, level = pair.partition("=")
        name, level = name.strip(), level.strip()
        if not sep or not name:
            raise ValueError(f"expected NAME=LEVEL, got {pair!r}")
        if level not in EXPOSURE_LEVELS:
            raise ValueError(
                f"unknown exposure {level!r} for {name} (one of: {', '.join(EXPOSURE_LEVELS)})"
            )
        result[name] = level  # type: ignore[assignment]
    return result


__all__ = [
    "ToolSet",
    "exposures_from_config",
    "parse_exposure_list",
    "tool_declaration",
]


class _Exposure(pydantic.BaseModel):
    # Built on the first [tools.NAME] table: a call without one never builds its validator.
    model_config = pydantic.ConfigDict(extra="ignore", defer_build=True)
    exposure: ToolExposure | None = None


def exposures_from_config(config: Mapping[str, Any] | None) -> dict[str, ToolExposure]:
    """The ``exposure`` key of each ``[tools.NAME]`` table of ``pi.toml`` (the other keys of
    those tables belong to the tool's plugin). Raises :class:`~pi_core.ConfigError` naming the
    file and the key: ``FILE: tools.NAME.exposure: Input should be 'direct', 'model-only',
    'codemode', 'deferred' or 'hidden' (got "x")``."""

    tools = (config or {}).get("tools", {})
    file = config_file(config)
    if not isinstance(tools, dict):
        raise ConfigError(f"{file}: tools: must be a table ([tools])")
    result: dict[str, ToolExposure] = {}
    for name, table in tools.items():
        if not isinstance(table, dict):
            continue  # a key of [tools] itself, or checked by the tool's plugin
        try:
            level = _Exposure.model_validate(table).exposure
        except pydantic.ValidationError as e:
            raise ConfigError(format_config_error(file, f"tools.{name}", e)) from None
        if level is not None:
            result[name] = level
    return result
