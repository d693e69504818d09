#!/usr/bin/env python3
"""PostToolUse hook: argv[1] says what to do with the tool result."""

import json
import sys

data = json.load(sys.stdin)
mode = sys.argv[1]
response = data["tool_response"]


def out(**fields):
    print(json.dumps(fields))


if mode == "block":
    out(decision="block", reason="Lint failed: 2 errors in the file you wrote")
elif mode == "context":
    out(hookSpecificOutput={"hookEventName": "PostToolUse", "additionalContext": "Formatted."})
elif mode == "redact":
    text = response.get("stdout", response.get("output"))
    out(
        hookSpecificOutput={
            "hookEventName": "PostToolUse",
            "updatedToolOutput": text.replace("hunter2", "[REDACTED]"),
        }
    )
elif mode == "redact-object":
    out(
        hookSpecificOutput={
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {**response, "stdout": response["stdout"].upper()},
        }
    )
elif mode == "wrong-shape":
    out(
        hookSpecificOutput={
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {"content": [{"type": "text", "text": "x"}]},
        }
    )
elif mode == "exit2":
    print("The output contains a secret", file=sys.stderr)
    sys.exit(2)
