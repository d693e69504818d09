"""The plugin layer: markers, the hook caller, the typed facade, the plugin manager."""
