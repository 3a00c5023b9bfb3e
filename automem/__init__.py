"""automem: automatic long-term memory for Hermes Agent.

Importing this package is cheap on purpose: Hermes loads the plugin on every start, so chromadb and the
embedding model are imported only when a store is first opened.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "open_store", "AutomemError"]


def __getattr__(name: str):
    # Lazy re-exports keep `import automem` free of chromadb and numpy.
    if name == "open_store":
        from .core.store import open_store

        return open_store
    if name == "AutomemError":
        from .errors import AutomemError

        return AutomemError
    raise AttributeError(f"module 'automem' has no attribute {name!r}")
