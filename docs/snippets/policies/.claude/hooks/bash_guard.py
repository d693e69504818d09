"""A PreToolUse hook in the exit-code style: exit 2 blocks, stderr is the reason."""

import json
import sys

call = json.load(sys.stdin)
command = call["tool_input"].get("command", "")
if "rm -rf /" in command:
    print("Refusing to delete from the root of the file system", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
