"""The ``[sandbox]`` table of ``pi.toml``, validated (``config``): read by every other room."""
