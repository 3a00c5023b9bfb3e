"""automem: automatic long-term memory for Hermes Agent.

The public Python API is `automem.Memories` (automem/api/, docs/api.md) with its result types and automem's
exceptions (automem.errors); everything else is internal and may change.

Importing this package is cheap on purpose: Hermes loads the plugin on every start, so chromadb and the
embedding model are imported only when a store is first opened.
"""

from __future__ import annotations

from .version import __version__

# `open_store` is no longer offered here: the Store it returns writes records as given (no dedup, no secret check),
# and the public way to add a memory is `Memories.remember`. automem.core.store.open_store stays, internal.
_API = ("Memories", "Decision", "Hit", "MemoryView", "HeldMemory", "Pinned", "Recall", "Step")
_ERRORS = ("AutomemError", "UsageError", "ConfigError", "StoreError", "LLMError", "NotFound", "Refused",
           "AutomemWarning")
_TRANSFER = ("ImportReport",)
_SHARING = ("ShareResult",)

__all__ = ["__version__", *_API, *_ERRORS, *_TRANSFER, *_SHARING]


def __getattr__(name: str):
    # Lazy re-exports keep `import automem` free of chromadb and numpy.
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _ERRORS:
        from . import errors

        return getattr(errors, name)
    if name in _TRANSFER:
        from .ops import transfer

        return getattr(transfer, name)
    if name in _SHARING:
        from .core import sharing

        return getattr(sharing, name)
    raise AttributeError(f"module 'automem' has no attribute {name!r}")
