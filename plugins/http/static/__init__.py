"""The web console's page, script and style, shipped as package data (no build step)."""
