"""Wire types: messages, content blocks, events and session files, in Pi's JSON shape."""
