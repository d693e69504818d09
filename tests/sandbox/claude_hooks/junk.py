#!/usr/bin/env python3
"""Misbehaves as argv[1] says: huge-stdout, huge-stderr, bad-json, array, text, binary."""

import sys

mode = sys.argv[1]
if mode == "huge-stdout":
    sys.stdout.write("{" + "x" * (3 * 1024 * 1024))
elif mode == "huge-stderr":
    sys.stderr.write("e" * (3 * 1024 * 1024))
    sys.exit(2)
elif mode == "bad-json":
    print('{"hookSpecificOutput": {"permissionDecision": "deny"')
elif mode == "array":
    print('["deny"]')
elif mode == "text":
    print("Checking the command... looks fine to me")
elif mode == "binary":
    sys.stdout.buffer.write(b"\xff\xfe\x00junk")
