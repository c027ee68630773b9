"""Checking: the input modes, comparing with golden files, the runner, expected failures."""
