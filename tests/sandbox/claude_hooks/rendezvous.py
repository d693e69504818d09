#!/usr/bin/env python3
"""Concurrency probe: writes argv[1]/argv[2] ("I started"), then waits (up to 5 s) for
argv[1]/argv[3] (the other hook started). Allows when it saw the other, exits 1 otherwise."""

import os
import sys
import time

directory, mine, other = sys.argv[1:4]
open(os.path.join(directory, mine), "w").close()
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    if os.path.exists(os.path.join(directory, other)):
        sys.exit(0)
    time.sleep(0.02)
print(f"{other} never started", file=sys.stderr)
sys.exit(1)
