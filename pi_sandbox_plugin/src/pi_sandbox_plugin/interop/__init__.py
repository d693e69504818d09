"""Policies written for other agents: Claude Code hooks (``claude_hooks``), Codex ``.rules``
files (``codex_rules``, evaluated in a child process by ``_codex_starlark.py``), and how a call
is judged by every configured source (``policy_sources``)."""
