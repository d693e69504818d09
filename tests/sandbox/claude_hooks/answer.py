#!/usr/bin/env python3
"""Prints argv[1] (a JSON text) on stdout and exits with argv[2] (default 0), after reading stdin;
argv[3], when given, is printed on stderr."""

import sys

sys.stdin.read()
print(sys.argv[1])
if len(sys.argv) > 3:
    print(sys.argv[3], file=sys.stderr)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
