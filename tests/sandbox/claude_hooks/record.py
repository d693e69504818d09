#!/usr/bin/env python3
"""Records what a hook receives: stdin, cwd and $CLAUDE_PROJECT_DIR, into the file argv[1]
(relative to $CLAUDE_PROJECT_DIR). Prints nothing: allows."""

import json
import os
import sys

with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], sys.argv[1]), "w") as f:
    json.dump(
        {
            "stdin": json.load(sys.stdin),
            "cwd": os.getcwd(),
            "CLAUDE_PROJECT_DIR": os.environ["CLAUDE_PROJECT_DIR"],
        },
        f,
    )
