"""automem's version: a leaf module, so every layer can name it without importing the package's facade."""

__version__ = "0.1.0"
