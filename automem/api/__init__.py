"""The public Python API: `automem.Memories`, and the results it returns.

    from automem import Memories

    with Memories(hermes_home="/tmp/hermes-demo") as mem:
        mem.remember("项目统一用Python 3.11", category="instruction")
        decision = mem.remember("项目改用Python 3.12", category="instruction")   # decision.action == "update"
        for hit in mem.search("which Python does the project use?"):
            print(hit.text, hit.distance)

One `Memories` is one Hermes root and profile, speaking for one person (`user=`, the owner by default). Each method
is the function the CLI, the Hermes provider and the dashboard call: the write path (duplicate / update / new; secrets
and personal data refused), the visibility rules (who sees what), forget's erasure (every copy), export and import
with their checks. Nothing here decides on its own. Results are frozen dataclasses; errors are automem's own
exceptions (automem.errors), each with a one-line message that says what to do.

Layer: above automem.hermes and automem.ops (it imports automem.hermes.gateway for `user=`, automem.ops.transfer for
export / import, automem.extract for the LLM judge, automem.core for the rest); the CLI and the dashboard sit on it.
Heavy modules (chromadb, the embedding model) load on first use, never on import.

The package: `memories.py` (the `Memories` class) and `results.py` (the dataclasses it returns).
"""

from __future__ import annotations

from .memories import Memories
from .results import CATEGORIES, Decision, HeldMemory, Hit, MemoryView, Pinned, Recall, Step

__all__ = ["Memories", "Decision", "Hit", "MemoryView", "HeldMemory", "Pinned", "Recall", "Step", "CATEGORIES"]
