"""Tools: the tool types, the ``@tool`` decorator and argument validation."""
