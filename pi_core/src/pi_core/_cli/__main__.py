"""``python -m pi_core._cli ...``: the same as the ``pi`` command."""

from pi_core._cli import main

main()
