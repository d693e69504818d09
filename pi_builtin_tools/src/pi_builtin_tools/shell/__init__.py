"""The shell tools: ``bash`` and ``powershell``, the output accumulator and the full-output
files (``output_files``), and the local bash backend (``local``) with the supervisor script each
command runs under (``_supervisor.py``)."""
