"""pi-weather: an example pi plugin."""
