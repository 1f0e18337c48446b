"""TODO codemap."""
