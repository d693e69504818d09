"""Start-up cost of the ``pi`` command: what a session that calls no model must not import.

httpx (which imports rich and click for its own command line) is the heaviest import of the
model providers: the built-in providers plugin imports them only when a factory is asked for
(``--model``), so ``pi replay`` / ``pi call`` start without it (docs/explanation/performance.md,
P7). Each check runs in a fresh interpreter, as the console script does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("httpx", "httpx_sse", "rich", "click", "PIL")

PROBE = """
import sys
from pi_core._cli import main
sys.argv = ["pi", *sys.argv[1:]]
try:
    status = main()
finally:
    print(sorted(name for name in {heavy!r} if name in sys.modules), file=sys.stderr)
sys.exit(status)
"""


def test_replay_of_a_read_imports_no_provider_and_no_terminal_library(tmp_path: Path) -> None:
    (tmp_path / "six.txt").write_bytes(b"hello\n")
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "six.txt"}}
    message = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    script = tmp_path / "messages.jsonl"
    script.write_text(json.dumps(message) + "\n")
    argv = ["replay", str(script), "--cwd", str(tmp_path), "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["content"] == [{"type": "text", "text": "hello\n"}]
    assert proc.stderr.splitlines()[-1] == "[]"


def test_the_providers_are_imported_when_a_model_is_resolved() -> None:
    code = (
        "import sys\n"
        "from pi_core._providers.plugin import builtin_provider_factories, resolve_model\n"
        "assert 'httpx' not in sys.modules\n"
        "provider = resolve_model(builtin_provider_factories(), 'openai:m', "
        "{'base_url': 'http://127.0.0.1:9/v1', 'api_key': 'k'})\n"
        "print(type(provider).__name__, 'httpx' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "OpenAIProvider True\n"
