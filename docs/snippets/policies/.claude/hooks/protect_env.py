"""A PreToolUse hook in the JSON style: deny edits of .env files, ask before writing outside
the project."""

import json
import os
import sys

call = json.load(sys.stdin)
path = call["tool_input"].get("file_path", "")
project = os.environ["CLAUDE_PROJECT_DIR"]
decision = None
if os.path.basename(path) == ".env":
    decision = ("deny", ".env files hold secrets: edit them by hand")
elif not path.startswith(project + os.sep):
    decision = ("ask", f"{path} is outside the project")
if decision is not None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision[0],
            "permissionDecisionReason": decision[1],
        }
    }
    print(json.dumps(output))
