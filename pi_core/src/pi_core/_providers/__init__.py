"""Model providers: scripted, OpenAI-compatible and Anthropic, over streaming HTTP."""
