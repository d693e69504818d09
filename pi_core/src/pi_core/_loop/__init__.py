"""The agent loop: turns, batches of tool calls, and the ``Agent`` host around them."""
