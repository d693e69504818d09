"""The backends: ``bwrap``, ``ssh``, ``container`` and ``ray`` (each a ``BashOperations`` and a
``FileOperations``; the file tools of bwrap and containers run as shell scripts, ``shell_files``),
their error (``errors``), and the wiring from ``[sandbox]`` to a session's backends
(``wiring``)."""
