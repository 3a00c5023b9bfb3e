"""Recall fusion scored at any setting over cached candidate features: the grid `python -m scripts.tune_recall`
searches, and the check (tests/test_ranking.py) that at the shipped setting it ranks as `automem.core.ranking.fuse`
does, so a figure the script prints for that row is what `Store.recall` would get.

A candidate is a dict of features: "sim" (cosine similarity), "kw" (BM25 / the best BM25), "cov" (the share of the
question's idf it holds), "ov" (shared concepts), "text", and its ranks "vrank" / "krank" in the two lists."""

from __future__ import annotations

from automem.core.ranking import COVERAGE_POWER, KEYWORD_GATE, QUESTION_PENALTY, base_score


def shipped_setting() -> dict:
    """The grid point `Store.recall` uses: the config's default weights, automem.core.ranking's coverage power,
    keyword gate and question penalty, no RRF."""
    from automem.config import Config

    cfg = Config()
    return {"kw": cfg.recall_keyword_weight, "cov_pow": COVERAGE_POWER, "ov": cfg.recall_rerank_weight, "rrf": 0.0,
            "gate": KEYWORD_GATE, "qpen": QUESTION_PENALTY}


def score(c: dict, p: dict) -> float:
    """A candidate's fused score at setting `p`: `automem.core.ranking.base_score`, as `fuse` computes it, plus the
    shared concepts (and, when the setting has it, reciprocal-rank fusion)."""
    s = base_score(c["sim"], c["kw"], c["cov"], c["text"], p["kw"], p.get("gate") or None, p.get("qpen", 0.0),
                   p["cov_pow"]) + p["ov"] * c["ov"]
    if p["rrf"]:
        s += p["rrf"] * ((1 / (60 + c["vrank"]) if c["vrank"] is not None else 0) +
                         (1 / (60 + c["krank"]) if c["krank"] is not None else 0)) * 60
    return s


def ranked(cands: list[dict], p: dict, k: int) -> list[str]:
    """The ids of the `k` best candidates at setting `p` (ties: the order they came in)."""
    order = sorted(enumerate(cands), key=lambda ic: (-score(ic[1], p), ic[0]))
    return [c["id"] for _, c in order[:k]]


def hit_rate(rows: list, p: dict, k: int) -> float:
    """The share of (candidates, good ids) rows with a good id among the `k` best at setting `p`."""
    return sum(bool(set(ranked(c, p, k)) & good) for c, good in rows) / len(rows) if rows else 0.0
