"""The sandbox's policies: what a command line runs and what the policy decides about it."""
