"""The `rondo` command line."""

from rondo.cli.app import app, main

__all__ = ["app", "main"]
