"""The tool pipeline: one tool call through prepare, validate, before, execute, after."""
