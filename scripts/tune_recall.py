#!/usr/bin/env python3
"""Tune the recall fusion on cached candidates: the tune parts only, the held-out parts printed at the chosen weights.

Recall fuses two candidate lists (`automem.core.ranking.fuse`): the nearest memories and the recall index's BM25
matches. Computing them is the slow part (the embedding, Chroma's query, FTS5); fusing them is cheap. This script
computes every question's candidates once, with their features (cosine similarity, BM25 / best BM25, the share of
the question's idf the memory holds, shared concepts, the share of its sentences that ask), then scores fusion
settings over those cached features:

- LoCoMo evidence recall@5 (the measure of `python -m scripts.eval_locomo`; tune = conversations 26, 30, 41;
  held-out = 42, 43);
- the recall bank's search hit@1 / hit@3 (`python -m scripts.eval_recall`'s search measure; tune =
  recall_bank.json, held-out = recall_bank_heldout.json and recall_bank_heldout2/3/4/5.json).

The grid is ranked by the tune parts alone (LoCoMo tune recall@5 + bank hit@3, with hit@1 as the tie-break); the
held-out figures of the best settings are printed beside them, never used to choose. The scoring at a setting is
tests/support/fusion_grid.py (tests/test_ranking.py checks it ranks as `fuse` at the shipped setting).

    python -m scripts.tune_recall /work/shared/benchmarks/locomo [--top 10] [--cache FILE]
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from pathlib import Path

from scripts import eval_locomo
from scripts.harness import DATA, header, temp_root
from tests.support import recall_eval
from tests.support.fusion_grid import hit_rate, shipped_setting


def candidates(store, query: str, profile: str, pool: int) -> list[dict]:
    """Every candidate of `query` with its features, as `Store.recall` sees them."""
    from automem.core import index
    from automem.core.ranking import query_overlap

    embedding = store.embed([query])[0]
    vector_hits = store.search(embedding=embedding, k=pool, profile=profile)
    store.ensure_index()
    flt = store.where(profile)
    found, weights = index.keyword_search(store.location, query, flt, limit=pool)
    keyword_hits = store._with_distances(found, embedding, {m.id: d for m, d in vector_hits})
    best = max((s for _, s, _ in keyword_hits), default=0.0)
    out: dict[str, dict] = {}
    for rank, (m, d) in enumerate(vector_hits):
        out[m.id] = {"id": m.id, "text": m.text, "sim": 1.0 - d, "vrank": rank, "kw": 0.0, "krank": None}
    for rank, (m, s, d) in enumerate(keyword_hits):
        c = out.setdefault(m.id, {"id": m.id, "text": m.text, "sim": 1.0 - d, "vrank": None})
        c["kw"], c["krank"] = (s / best if best > 0 else 0.0), rank
    for c in out.values():
        c["cov"] = index.coverage(weights, c["text"])
        c["ov"] = query_overlap(query, c["text"])
    return list(out.values())


def collect_locomo(path: str, pool: int) -> dict[str, list]:
    from automem.config import Config
    from automem.core.store import open_store
    from automem.paths import Location
    from automem.text import MAX_CHARS

    files = eval_locomo.find_files([path])
    convs = [eval_locomo.load_conversation(f, MAX_CHARS) for f in files]
    memories, dia_of = eval_locomo.build_memories(convs)
    parts: dict[str, list] = {"tune": [], "held-out": []}
    with temp_root(prefix="automem-tune-") as tmp:
        store = open_store(Location.resolve(hermes_home=tmp), Config())
        try:
            store.import_memories(memories)
            for c in convs:
                part = "tune" if c["stem"] in eval_locomo.SPLITS["tune"] else "held-out"
                for q in c["questions"]:
                    cands = candidates(store, q["question"], c["name"], pool)
                    good = {i for i in (x["id"] for x in cands) if dia_of[i] in q["evidence"]}
                    parts[part].append((cands, good))
        finally:
            store.close()
    return parts


def collect_bank(bank_path: Path, pool: int) -> list:
    from automem.config import Config
    from automem.core.store import open_store
    from automem.paths import Location

    bank = recall_eval.load_bank(bank_path)
    rows = []
    with temp_root(prefix="automem-tune-") as tmp:
        store = open_store(Location.resolve(hermes_home=tmp), Config())
        try:
            mapping, _ = recall_eval.load_into(store, bank)
            for q in bank["questions"]:
                good = {mapping[e] for e in q["expect"] if e in mapping}
                rows.append((candidates(store, q["question"], q["profile"], pool), good))
        finally:
            store.close()
    return rows


HELDOUT_BANKS = {"held-out": recall_eval.HELDOUT_BANK,
                 "held-out2": DATA / "recall_bank_heldout2.json",
                 "held-out3": DATA / "recall_bank_heldout3.json",
                 "held-out4": DATA / "recall_bank_heldout4.json",
                 "held-out5": DATA / "recall_bank_heldout5.json"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("locomo", help="LoCoMo folder")
    ap.add_argument("--pool", type=int, default=40)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--cache", metavar="FILE", help="keep the candidates in FILE (pickle) and reuse them next time")
    args = ap.parse_args(argv)
    print(header("tune_recall"), flush=True)
    if args.cache and Path(args.cache).exists():
        with open(args.cache, "rb") as fh:
            loc, bank = pickle.load(fh)
    else:
        loc = collect_locomo(args.locomo, args.pool)
        bank = {"tune": collect_bank(recall_eval.DEFAULT_BANK, args.pool),
                **{part: collect_bank(path, args.pool) for part, path in HELDOUT_BANKS.items()}}
        if args.cache:
            with open(args.cache, "wb") as fh:
                pickle.dump((loc, bank), fh)
    grid = [dict(zip(("kw", "cov_pow", "ov", "rrf", "gate", "qpen"), v)) for v in itertools.product(
        (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0), (0, 1, 2), (0.0, 0.2, 0.4, 0.6, 0.8), (0.0, 0.5, 1.0),
        (None, (0.0, 0.2), (0.05, 0.25), (0.1, 0.3)), (0.0, 0.05, 0.15, 0.3, 0.5))]
    results = []
    for p in grid:
        r = {"p": p, "loc_tune": hit_rate(loc["tune"], p, 5), "bank_tune3": hit_rate(bank["tune"], p, 3),
             "bank_tune1": hit_rate(bank["tune"], p, 1)}
        r["objective"] = (r["loc_tune"] + r["bank_tune3"], r["bank_tune1"])
        results.append(r)
    results.sort(key=lambda r: r["objective"], reverse=True)
    shipped = shipped_setting()
    print(f"{'setting':<70} {'LoCoMo tune':>11} {'held-out':>9} {'bank@3 tune':>11} {'@1':>6} "
          + " ".join(f"{part + ' @3':>13}" for part in HELDOUT_BANKS))
    for r in [next(x for x in results if x["p"] == shipped), *results[:args.top]]:
        p = r["p"]
        print(f"{str(p):<70} {100 * r['loc_tune']:>10.1f}% {100 * hit_rate(loc['held-out'], p, 5):>8.1f}% "
              f"{100 * r['bank_tune3']:>10.1f}% {100 * r['bank_tune1']:>5.1f}% "
              + " ".join(f"{100 * hit_rate(bank[part], p, 3):>12.1f}%" for part in HELDOUT_BANKS if part in bank))
    return 0


if __name__ == "__main__":
    sys.exit(main())
