#!/usr/bin/env python3
"""JSON style PreToolUse hook: answers with hookSpecificOutput.permissionDecision."""

import json
import sys


def decide(decision, reason, **extra):
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
            **extra,
        }
    }
    print(json.dumps(output))
    sys.exit(0)


data = json.load(sys.stdin)
tool = data["tool_name"]
tool_input = data["tool_input"]
if tool == "Bash":
    command = tool_input.get("command", "")
    if "rm -rf" in command:
        decide("deny", "Destructive command blocked by json_guard")
    if command.startswith("sudo "):
        decide("ask", "sudo needs a person")
    if command.startswith("npm "):
        decide(
            "allow",
            "npm is pnpm here",
            updatedInput={"command": "pnpm " + command[len("npm ") :]},
        )
    if command == "git status":
        decide("allow", "read-only git", additionalContext="The repository is clean.")
elif tool in ("Write", "Edit", "MultiEdit", "Read"):
    if tool_input.get("file_path", "").endswith(".env"):
        decide("deny", f"{tool} of .env files is not allowed")
print("nothing to say")
