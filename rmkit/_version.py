"""The single place the kit's version lives (read by pyproject and `rmkit --version`)."""

__version__ = "0.1.0"
