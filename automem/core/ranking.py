"""Recall ranking: vector distance, then a re-rank by what the question and the memory say in common.

The embedding alone misses some cross-language pairs ("持续集成" vs "CI pipeline", "阅读量" vs "readers"). The
write path's text analysis (`automem.core.dedup.analyse`) maps both languages onto shared concepts and values, so a
memory that shares the question's concepts moves up. Plain functions; the store supplies the candidates.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence, TypeVar

T = TypeVar("T")


@lru_cache(maxsize=4096)
def _meaning(text: str):
    from .dedup import analyse

    return analyse(text).meaning


def query_overlap(query: str, text: str) -> float:
    """The share (0..1) of the question's concepts, values and content words that `text` also holds."""
    q, t = _meaning(query), _meaning(text)
    total = sum(q.values())
    if not total:
        return 0.0
    return sum(min(w, t[k]) for k, w in q.items() if k in t) / total


def rerank(query: str, hits: Sequence[tuple[T, float]], text_of, k: int, weight: float) -> list[tuple[T, float]]:
    """The `k` best of `hits` ((item, cosine distance), nearest first) by distance - weight * overlap.

    Distances are returned unchanged, so callers' distance cut-offs keep their meaning.
    """
    if weight <= 0:
        return list(hits[:k])
    scored = [(dist - weight * query_overlap(query, text_of(item)), i, item, dist)
              for i, (item, dist) in enumerate(hits)]
    scored.sort(key=lambda s: (s[0], s[1]))
    return [(item, dist) for _, _, item, dist in scored[:k]]
