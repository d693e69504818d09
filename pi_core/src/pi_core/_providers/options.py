"""What the HTTP providers share before speaking their protocol.

* :func:`http_settings`: the timeout and retry options of ``create(model, options)``.
* :func:`llm_history`: the messages a provider converts, as pi-ai's ``transformMessages``
  leaves them: dict messages parsed, assistant messages that ended in ``error``/``aborted``
  dropped (an incomplete turn is not replayed), and for each tool call left without a result an
  error result ``No result provided`` inserted before the next user or assistant message (or
  at the end), since both protocols reject a call without its result.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from pi_core._errors import ConfigError
from pi_core._providers.http import HttpSettings, RetryPolicy
from pi_core._wire.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

NO_RESULT_TEXT = "No result provided"
"""Text of the error result made up for a tool call that has none."""

_RETRY_OPTIONS = {
    "max_retries": "max_retries",
    "retry_base_delay": "base_delay",
    "retry_max_delay": "max_delay",
    "max_retry_after": "max_retry_after",
}

_MESSAGE = TypeAdapter(AgentMessage)


def http_settings(options: dict[str, Any]) -> HttpSettings:
    """:class:`~pi_core._providers.http.HttpSettings` from ``options``: ``timeout`` (seconds),
    ``max_retries``, ``retry_base_delay``, ``retry_max_delay``, ``max_retry_after``
    (seconds); absent keys keep the defaults.

    Raises :class:`~pi_core._errors.ConfigError` naming the option when a value is not a
    non-negative number (``max_retries``: a non-negative integer).
    """
    retry: dict[str, Any] = {}
    for option, attribute in _RETRY_OPTIONS.items():
        if options.get(option) is not None:
            retry[attribute] = _number(options, option, integer=option == "max_retries")
    settings: dict[str, Any] = {"retry": RetryPolicy(**retry)}
    if options.get("timeout") is not None:
        settings["timeout"] = _number(options, "timeout")
    return HttpSettings(**settings)


def bool_option(options: dict[str, Any], key: str, default: bool = False) -> bool:
    """The boolean provider option ``key`` (``default`` when absent); a
    :class:`~pi_core._errors.ConfigError` naming it when it is not a boolean."""
    value = options.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"provider option {key} must be a boolean (got {value!r})")
    return value


def _number(options: dict[str, Any], key: str, *, integer: bool = False) -> Any:
    value = options[key]
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0 or (integer and str(number) != str(value).strip()):
        kind = "a non-negative integer" if integer else "a non-negative number"
        raise ConfigError(f"provider option {key} must be {kind} (got {value!r})")
    return number


def llm_history(messages: list[Any]) -> list[Any]:
    """``messages`` ready for conversion (see the module docstring)."""
    parsed = [_MESSAGE.validate_python(m) if isinstance(m, dict) else m for m in messages]
    result: list[Any] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def close_pending() -> None:
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text=NO_RESULT_TEXT)],
                        is_error=True,
                    )
                )
        pending.clear()
        answered.clear()

    for message in parsed:
        if isinstance(message, AssistantMessage):
            close_pending()
            if message.stop_reason in ("error", "aborted"):
                continue
            pending.extend(message.tool_calls)
            result.append(message)
        elif isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            result.append(message)
        elif isinstance(message, UserMessage):
            close_pending()
            result.append(message)
        else:
            result.append(message)
    close_pending()
    return result


__all__ = ["NO_RESULT_TEXT", "bool_option", "http_settings", "llm_history"]
