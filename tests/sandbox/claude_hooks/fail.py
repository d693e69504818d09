#!/usr/bin/env python3
"""Crashes: a message on stderr, exit 1."""

import sys

print("Traceback (most recent call last):\nKeyError: 'tool_input'", file=sys.stderr)
sys.exit(1)
