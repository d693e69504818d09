"""What backend plugins build on; public through :mod:`pi_core.backends`."""
