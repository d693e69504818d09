"""pytest plugin for plugin authors (fixtures arrive with the plugin system)."""
