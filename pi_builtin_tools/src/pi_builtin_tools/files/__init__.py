"""The file tools and their text engine: ``read``, ``edit`` (matching and diffs in
``edit_diff``), ``write``; encodings and access checks, image processing, file-system error
texts, truncation, and the local file backend (``local``)."""
