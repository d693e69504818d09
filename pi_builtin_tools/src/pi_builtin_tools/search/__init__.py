"""The search tools: ``grep``, ``find`` (fd's glob rules in ``fd_glob``) and ``ls``; ripgrep's
error texts (``rg_errors``) and the bounded listing they print (``output``)."""
