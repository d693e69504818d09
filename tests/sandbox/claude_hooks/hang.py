#!/usr/bin/env python3
"""Hangs: starts a grandchild ``sleep`` (its pid written to argv[1]) and sleeps itself."""

import subprocess
import sys
import time

child = subprocess.Popen(["sleep", "1000"])
with open(sys.argv[1], "w") as f:
    f.write(str(child.pid))
print("still thinking", file=sys.stderr, flush=True)
time.sleep(1000)
