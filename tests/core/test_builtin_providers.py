"""The built-in providers plugin and ``resolve_model`` (issue 5 item 1; DESIGN §2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from protocol_servers import (
    ProtocolServer,
    Reply,
    anthropic_frames,
    anthropic_text_block,
    openai_text_reply,
)

from pi_core._errors import ConfigError, PluginError
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._plugins import builtin_providers
from pi_core._plugins.builtin_providers import builtin_provider_factories, resolve_model
from pi_core._plugins.facade import PluginHooks
from pi_core._plugins.manager import PiPluginManager
from pi_core._plugins.markers import hookimpl
from pi_core._providers.anthropic import AnthropicProvider
from pi_core._providers.base import ScriptedProvider
from pi_core._providers.http import HttpSettings, RetryPolicy
from pi_core._providers.openai import OpenAIProvider
from pi_core._providers.options import http_settings
from pi_core._tools.definition import to_agent_tool, tool


@pytest.fixture(autouse=True)
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_pi_register_providers(plugin_manager: PiPluginManager, register_plugin: Any) -> None:
    register_plugin(builtin_providers, name="builtin_providers")
    providers = PluginHooks(plugin_manager).register_providers()
    assert sorted(providers) == ["anthropic", "openai", "scripted"]
    assert [type(p).__name__ for p in providers.values()] == [
        "ScriptedProviderFactory",
        "OpenAIProviderFactory",
        "AnthropicProviderFactory",
    ]


def test_resolve_model_through_hooks_manager_or_mapping(
    plugin_manager: PiPluginManager, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_providers, name="builtin_providers")
    options = {"base_url": "http://127.0.0.1:9/v1"}
    for source in (PluginHooks(plugin_manager), plugin_manager, builtin_provider_factories()):
        provider = resolve_model(source, "openai:llama3.2:3b", options)
        assert isinstance(provider, OpenAIProvider)
        assert provider.model == "llama3.2:3b"  # the model may hold colons (Ollama tags)
        assert provider.url == "http://127.0.0.1:9/v1/chat/completions"
        assert provider.api_key is None


@pytest.mark.parametrize("spec", ["gpt-4o", ":gpt", "openai:", ""])
def test_resolve_model_needs_provider_and_model(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(builtin_provider_factories(), spec)
    assert str(info.value) == f"model must be PROVIDER:MODEL (got {spec!r})"


def test_resolve_model_unknown_provider_lists_the_registered_ones(
    plugin_manager: PiPluginManager, register_plugin: Any
) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(plugin_manager, "openai:gpt-4o")
    assert str(info.value) == (
        "unknown model provider 'openai' in 'openai:gpt-4o' (registered providers: none)"
    )
    register_plugin(builtin_providers, name="builtin_providers")
    with pytest.raises(ConfigError) as info:
        resolve_model(plugin_manager, "gemini:pro")
    assert str(info.value) == (
        "unknown model provider 'gemini' in 'gemini:pro' "
        "(registered providers: anthropic, openai, scripted)"
    )


def test_openai_key_required_for_the_openai_api_only(monkeypatch: pytest.MonkeyPatch) -> None:
    factories = builtin_provider_factories()
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, "openai:gpt-4o")
    assert str(info.value) == (
        "openai:gpt-4o needs an API key: set OPENAI_API_KEY or pass api_key "
        "(a local server given with --base-url needs none)"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    provider = resolve_model(factories, "openai:gpt-4o")
    assert isinstance(provider, OpenAIProvider)
    assert (provider.url, provider.api_key) == (
        "https://api.openai.com/v1/chat/completions",
        "sk-env",
    )
    with_option = resolve_model(factories, "openai:gpt-4o", {"api_key": "sk-opt"})
    assert isinstance(with_option, OpenAIProvider)
    assert with_option.api_key == "sk-opt"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    local = resolve_model(factories, "openai:qwen")
    assert isinstance(local, OpenAIProvider)
    assert local.url == "http://localhost:11434/v1/chat/completions"


def test_anthropic_key_required(monkeypatch: pytest.MonkeyPatch) -> None:
    factories = builtin_provider_factories()
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, "anthropic:claude-sonnet-4-5")
    assert str(info.value) == (
        "anthropic:claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY or pass api_key"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    provider = resolve_model(
        factories,
        "anthropic:claude-sonnet-4-5",
        {"max_tokens": 2000, "max_retries": 5, "retry_base_delay": 0.5, "timeout": 30},
    )
    assert isinstance(provider, AnthropicProvider)
    assert provider.api_key == "sk-ant-env"
    assert provider.url == "https://api.anthropic.com/v1/messages"
    assert provider.max_tokens == 2000
    assert provider.settings == HttpSettings(
        timeout=30, retry=RetryPolicy(max_retries=5, base_delay=0.5)
    )


def test_http_settings_options() -> None:
    assert http_settings({}) == HttpSettings()
    assert http_settings({"retry_max_delay": "2", "max_retry_after": 5}) == HttpSettings(
        retry=RetryPolicy(max_delay=2.0, max_retry_after=5.0)
    )
    with pytest.raises(ConfigError) as info:
        http_settings({"max_retries": 1.5})
    assert str(info.value) == "provider option max_retries must be a non-negative integer (got 1.5)"
    with pytest.raises(ConfigError) as info:
        http_settings({"timeout": "soon"})
    assert str(info.value) == "provider option timeout must be a non-negative number (got 'soon')"


def test_a_failing_or_wrong_factory_is_a_plugin_error() -> None:
    class Broken:
        name = "broken"

        def create(self, model: str, options: dict[str, Any]) -> Any:
            raise ValueError("no such model")

    class Wrong:
        name = "wrong"

        def create(self, model: str, options: dict[str, Any]) -> Any:
            return object()

    with pytest.raises(PluginError) as info:
        resolve_model({"broken": Broken()}, "broken:x")
    assert (
        str(info.value) == "provider 'broken' failed to create model 'x': ValueError: no such model"
    )
    with pytest.raises(PluginError) as info:
        resolve_model({"wrong": Wrong()}, "wrong:x")
    assert str(info.value).startswith("provider 'wrong' returned <object object at ")
    assert str(info.value).endswith(" for 'x', which has no stream()")


def test_a_plugin_can_add_a_provider(plugin_manager: PiPluginManager, register_plugin: Any) -> None:
    class Echo:
        name = "echo"

        def create(self, model: str, options: dict[str, Any]) -> ScriptedProvider:
            return ScriptedProvider(
                [{"role": "assistant", "content": [{"type": "text", "text": model}]}]
            )

    class Plugin:
        @hookimpl
        def pi_register_providers(self, register: Any) -> None:
            register(Echo())

    register_plugin(builtin_providers, name="builtin_providers")
    register_plugin(Plugin(), name="echo_plugin")
    provider = resolve_model(plugin_manager, "echo:hello")
    assert isinstance(provider, ScriptedProvider)
    assert provider.messages[0].text == "hello"


# --- scripted:FILE --------------------------------------------------------------------------------


def script_lines() -> list[dict[str, Any]]:
    return [
        {"type": "session", "version": 3, "id": "s1", "cwd": "/x"},
        {"type": "message", "id": "m1", "message": {"role": "user", "content": "hi"}},
        {
            "type": "message",
            "id": "m2",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "t1", "name": "shout", "arguments": {"word": "hey"}}
                ],
                "stopReason": "toolUse",
            },
        },
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": "shout",
            "content": [{"type": "text", "text": "HEY"}],
            "isError": False,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Shouted."}],
            "stopReason": "stop",
        },
    ]


async def test_scripted_file_plays_its_assistant_messages(tmp_path: Path) -> None:
    (tmp_path / "script.jsonl").write_text(
        "\n".join(json.dumps(line) for line in script_lines()) + "\n\n"
    )

    @tool
    def shout(word: str) -> str:
        """Shout a word."""
        return word.upper()

    provider = resolve_model(
        builtin_provider_factories(), "scripted:script.jsonl", {"cwd": str(tmp_path)}
    )
    assert isinstance(provider, ScriptedProvider)
    assert provider.stream_deltas is True
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    messages = await run_agent_loop(
        ["go"], AgentContext(tools=[to_agent_tool(shout)]), LoopConfig(provider=provider), emit
    )
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[2].text == "HEY"
    assert messages[3].text == "Shouted."
    assert "message_update" in [e.type for e in events]
    assert provider.played == 2


def test_scripted_file_errors(tmp_path: Path) -> None:
    factories = builtin_provider_factories()
    missing = tmp_path / "none.jsonl"
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, f"scripted:{missing}")
    assert (
        str(info.value) == f"scripted:{missing}: cannot read {missing}: No such file or directory"
    )

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "assistant", "content": []}\n{oops\n')
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, f"scripted:{bad}")
    assert str(info.value).startswith(f"{bad}:2: not JSON: ")

    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"role": "assistant", "content": 5}\n')
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, f"scripted:{wrong}")
    assert str(info.value).startswith(f"{wrong}:1: not an assistant message: content: ")

    good = tmp_path / "good.jsonl"
    good.write_text('{"role": "assistant", "content": []}\n')
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, f"scripted:{good}", {"when_exhausted": "loop"})
    assert str(info.value) == (
        f"scripted:{good}: when_exhausted must be error, repeat or stop (got 'loop')"
    )
    repeat = resolve_model(factories, f"scripted:{good}", {"when_exhausted": "repeat"})
    assert isinstance(repeat, ScriptedProvider)
    assert repeat.when_exhausted == "repeat"

    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"role": "user", "content": "hi"}\n')
    with pytest.raises(ConfigError) as info:
        resolve_model(factories, f"scripted:{empty}")
    assert str(info.value) == f"scripted:{empty}: {empty} holds no assistant message"


# --- resolved HTTP providers against the loopback servers -------------------------------------


async def test_resolved_openai_provider_talks_to_a_local_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    with ProtocolServer([openai_text_reply(["local ", "model"])]) as server:
        provider = resolve_model(
            builtin_provider_factories(), "openai:qwen2.5-coder", {"base_url": f"{server.url}/v1"}
        )
        messages = await run_agent_loop(["hi"], AgentContext(), LoopConfig(provider=provider), emit)
    assert messages[-1].text == "local model"
    assert messages[-1].model == "qwen2.5-coder"
    assert server.requests[0].body["model"] == "qwen2.5-coder"
    assert "authorization" not in server.requests[0].headers


async def test_resolved_anthropic_provider_uses_the_env_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-xyz")
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    reply = Reply(frames=anthropic_frames(anthropic_text_block(0, ["Hi"]), "end_turn"))
    with ProtocolServer([reply]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        provider = resolve_model(builtin_provider_factories(), "anthropic:claude-haiku-4-5")
        messages = await run_agent_loop(["hi"], AgentContext(), LoopConfig(provider=provider), emit)
    assert messages[-1].text == "Hi"
    assert server.requests[0].headers["x-api-key"] == "sk-ant-xyz"
    assert server.requests[0].body["model"] == "claude-haiku-4-5"
