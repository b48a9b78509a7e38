"""The `keras-seq` command line."""

from zoo.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
