"""The search tools: ``grep``, ``find`` (fd's glob rules in ``fd_glob``, the directories it
lists in ``find_dirs``) and ``ls``; the bounded listing they print (``output``)."""
