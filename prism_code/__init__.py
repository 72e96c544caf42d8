"""prism-code: a local, private code assistant library (no server imports here)."""

__version__ = "0.1.0"
