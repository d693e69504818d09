"""The model providers built into the core, as an internal plugin.

Like pytest's internal plugins, this module is registered on a plugin manager the way any
plugin is; its :func:`pi_register_providers` registers three factories:

* ``scripted:FILE`` (:class:`ScriptedProviderFactory`): plays back the assistant messages of a
  JSONL file through :class:`~pi_core._providers.base.ScriptedProvider` (no network);
* ``openai:MODEL`` (:class:`~pi_core._providers.openai.OpenAIProviderFactory`);
* ``anthropic:MODEL`` (:class:`~pi_core._providers.anthropic.AnthropicProviderFactory`).

:func:`resolve_model` turns ``--model PROVIDER:MODEL`` into a provider through whatever the
plugins registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pluggy
from pydantic import ValidationError

from pi_core._errors import ConfigError, PiError, PluginError
from pi_core._plugins.facade import PluginHooks
from pi_core._plugins.markers import hookimpl
from pi_core._providers.base import ModelProvider, ScriptedProvider
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import AssistantMessage


class ScriptedProviderFactory:
    """``scripted:FILE``: a :class:`~pi_core._providers.base.ScriptedProvider` playing ``FILE``.

    Each non-blank line of ``FILE`` is an assistant message (``{"role": "assistant", ...}``)
    or a Pi session entry holding one (``{"type": "message", "message": {...}}``); other
    messages and session lines (the header, user messages, tool results) are skipped, so a Pi
    session file plays back its model's side. A relative ``FILE`` is resolved against
    ``options["cwd"]`` (else the current directory). ``options``: ``when_exhausted``
    (``"error"``, default, ``"repeat"``, ``"stop"``) and ``stream_deltas`` (default ``True``:
    each message streams as ``start``, deltas and ``done``).

    Raises :class:`~pi_core._errors.ConfigError` naming the file (and line) when it is missing,
    a line is not JSON or not a valid assistant message, or it holds no assistant message.
    """

    name = "scripted"

    def create(self, model: str, options: dict[str, Any]) -> ScriptedProvider:
        """The provider for script file ``model``."""
        from pi_core._wire.session_files import SessionFileError, read_bounded_lines

        path = Path(model).expanduser()
        if not path.is_absolute() and options.get("cwd"):
            path = Path(options["cwd"]) / path
        try:
            lines = read_bounded_lines(path, str(path))
        except SessionFileError as exc:
            raise ConfigError(f"scripted:{model}: {exc}") from None
        messages = [
            message
            for number, line in enumerate(lines, start=1)
            if (message := _script_line(path, number, line)) is not None
        ]
        if not messages:
            raise ConfigError(f"scripted:{model}: {path} holds no assistant message")
        when_exhausted = options.get("when_exhausted", "error")
        if when_exhausted not in ("error", "repeat", "stop"):
            raise ConfigError(
                f"scripted:{model}: when_exhausted must be error, repeat or stop "
                f"(got {when_exhausted!r})"
            )
        return ScriptedProvider(
            messages,
            when_exhausted=when_exhausted,
            stream_deltas=options.get("stream_deltas", True),
        )


def _script_line(path: Path, number: int, line: str) -> AssistantMessage | None:
    if not line.strip():
        return None
    try:
        value = parse_json(line)
    except ValueError as exc:
        raise ConfigError(f"{path}:{number}: not JSON: {exc}") from exc
    if isinstance(value, dict) and value.get("type") == "message":
        value = value.get("message")
    if not isinstance(value, dict) or value.get("role") != "assistant":
        return None
    try:
        return AssistantMessage.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(
            f"{path}:{number}: not an assistant message: {where}: {first['msg']}"
        ) from exc


def builtin_provider_factories() -> dict[str, Any]:
    """``{"scripted": ..., "openai": ..., "anthropic": ...}``: fresh factories.

    The HTTP providers are imported here, not with this module: the plugin manager registers
    this plugin in every session, and httpx (which imports rich and click) would cost a
    command that never calls a model about 0.2 s of start-up."""
    from pi_core._providers.anthropic import AnthropicProviderFactory
    from pi_core._providers.openai import OpenAIProviderFactory

    factories: list[Any] = [
        ScriptedProviderFactory(),
        OpenAIProviderFactory(),
        AnthropicProviderFactory(),
    ]
    return {factory.name: factory for factory in factories}


@hookimpl
def pi_register_providers(register: Callable[[Any], None]) -> None:
    """Register ``scripted``, ``openai`` and ``anthropic``."""
    for factory in builtin_provider_factories().values():
        register(factory)


def resolve_model(source: Any, spec: str, options: dict[str, Any] | None = None) -> ModelProvider:
    """The provider for ``spec`` (``PROVIDER:MODEL``; ``MODEL`` may hold more colons).

    ``source``: a :class:`~pi_core._plugins.facade.PluginHooks`, a pluggy manager (its
    ``pi_register_providers`` implementations are asked), or a mapping of provider names to
    factories. ``options`` are passed to ``create(model, options)`` unchanged.

    Raises :class:`~pi_core._errors.ConfigError` for a spec without ``PROVIDER:MODEL``, an
    unknown provider (the message lists the registered ones) and whatever the factory raises
    as ``ConfigError`` (a missing API key); :class:`~pi_core._errors.PluginError` when a
    factory fails otherwise or returns something without ``stream``.
    """
    providers = _providers(source)
    name, sep, model = spec.partition(":")
    if not sep or not name or not model:
        raise ConfigError(f"model must be PROVIDER:MODEL (got {spec!r})")
    factory = providers.get(name)
    if factory is None:
        known = ", ".join(sorted(providers)) or "none"
        raise ConfigError(
            f"unknown model provider {name!r} in {spec!r} (registered providers: {known})"
        )
    try:
        provider = factory.create(model, dict(options or {}))
    except PiError:
        raise
    except Exception as exc:
        raise PluginError(
            f"provider {name!r} failed to create model {model!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if not callable(getattr(provider, "stream", None)):
        raise PluginError(
            f"provider {name!r} returned {provider!r} for {model!r}, which has no stream()"
        )
    return provider


def _providers(source: Any) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    if isinstance(source, pluggy.PluginManager):
        source = PluginHooks(source)
    register_providers = getattr(source, "register_providers", None)
    if register_providers is None:
        raise TypeError(
            f"resolve_model needs PluginHooks, a plugin manager or a mapping, not {source!r}"
        )
    providers: Mapping[str, Any] = register_providers()
    return providers


__all__ = [
    "ScriptedProviderFactory",
    "builtin_provider_factories",
    "pi_register_providers",
    "resolve_model",
]
