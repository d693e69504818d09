#!/usr/bin/env python3
"""Exit-code style PreToolUse hook (the style of Claude Code's bash validator example): reads the
call from stdin, prints why a Bash command is refused to stderr and exits 2; exit 1 when stdin is
not JSON (a non-blocking error under Claude Code)."""

import json
import re
import sys

RULES = [
    (r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f\b", "Do not delete trees with rm -rf; remove files one by one"),
    (r"\bgit\s+push\b.*--force\b", "Force pushes are not allowed"),
    (r"^grep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance"),
]


def main() -> None:
    try:
        data = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
        sys.exit(1)
    if data.get("tool_name") != "Bash":
        sys.exit(0)
    command = data.get("tool_input", {}).get("command", "")
    issues = [message for pattern, message in RULES if re.search(pattern, command)]
    if issues:
        for message in issues:
            print(f"• {message}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
