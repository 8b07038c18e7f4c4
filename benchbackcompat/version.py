"""The version of benchbackcompat (its one definition: the package metadata reads it)."""

__version__ = "0.1.0"
