"""``python -m pi_core.cli ...``: the same as the ``pi`` command."""

from pi_core.cli import main

main()
