#!/usr/bin/env python3
"""Recall quality: do questions worded unlike the memories find them?

Loads tests/data/recall_bank.json into a fresh store in a temporary Hermes root through the write path
(`automem.core.write_path.remember`), then asks each question with `Store.recall(question, k=3, profile=...)` (the
profile's visibility: its own memories plus the shared wings of the others) and checks whether an expected
memory is first (hit@1) or among the first three (hit@3). Prints the figures overall, by question language,
same- vs cross-language and by profile. Exit 1 when hit@3 < 90% or a bank memory was not stored as new.

    python scripts/eval_recall.py [--json] [--misses] [--bank PATH] [-k 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_BANK = REPO / "tests" / "data" / "recall_bank.json"
HIT3_TARGET = 0.90


def load_bank(path: Path = DEFAULT_BANK) -> dict:
    with open(path, encoding="utf-8") as f:
        bank = json.load(f)
    ids = {m["id"] for m in bank["memories"]}
    for q in bank["questions"]:
        missing = [i for i in q["expect"] if i not in ids]
        if missing:
            raise ValueError(f"{path}: question {q['question']!r} expects unknown memories {missing}")
    return bank


def load_into(store, bank: dict) -> tuple[dict[str, str], list[dict]]:
    """Store the bank's memories through the write path. Returns bank id -> stored id, and the decisions that were
    not "new" (a bank memory merged into or superseding another is a bank error or a dedup error)."""
    from automem.core.write_path import Candidate, remember

    mems = bank["memories"]
    decisions = remember(store, [Candidate(m["text"], wing=m["wing"], profile=m["profile"], room="import",
                                           added_by="eval_recall") for m in mems])
    mapping, problems = {}, []
    for m, d in zip(mems, decisions):
        if d.action != "new":
            problems.append({"id": m["id"], "text": m["text"], "decision": d.action, "reason": d.reason,
                             "matched_id": d.matched_id})
        else:
            mapping[m["id"]] = d.id
    return mapping, problems


def ask_all(store, bank: dict, mapping: dict[str, str], k: int = 3) -> dict:
    """Ask every question; the figures and the misses."""
    back = {v: b for b, v in mapping.items()}
    rows = []
    latencies = []
    for q in bank["questions"]:
        started = time.perf_counter()
        hits = store.recall(q["question"], k=k, profile=q["profile"])
        latencies.append((time.perf_counter() - started) * 1000)
        found = [back.get(m.id, m.id) for m, _ in hits]
        rank = next((i for i, f in enumerate(found) if f in q["expect"]), None)
        rows.append({**q, "found": found, "rank": rank,
                     "found_texts": [m.text for m, _ in hits], "distances": [round(d, 3) for _, d in hits]})

    def figures(subset: list[dict]) -> dict:
        n = len(subset)
        return {"n": n,
                "hit@1": round(sum(r["rank"] == 0 for r in subset) / n, 4) if n else None,
                "hit@3": round(sum(r["rank"] is not None and r["rank"] < 3 for r in subset) / n, 4) if n else None}

    groups = {
        "all": rows,
        "question zh": [r for r in rows if r["lang"] == "zh"],
        "question en": [r for r in rows if r["lang"] == "en"],
        "same language": [r for r in rows if not r["cross"]],
        "cross-language": [r for r in rows if r["cross"]],
    }
    for profile in sorted({r["profile"] for r in rows}):
        groups[f"profile {profile}"] = [r for r in rows if r["profile"] == profile]
    latencies.sort()
    return {"figures": {name: figures(subset) for name, subset in groups.items()},
            "search_ms_median": round(latencies[len(latencies) // 2], 1),
            "misses": [r for r in rows if r["rank"] is None or r["rank"] > 0]}


def evaluate(store, bank: dict, k: int = 3) -> dict:
    started = time.perf_counter()
    mapping, problems = load_into(store, bank)
    load_s = time.perf_counter() - started
    result = ask_all(store, bank, mapping, k)
    result.update(memories=len(bank["memories"]), questions=len(bank["questions"]), not_new=problems,
                  load_seconds=round(load_s, 2))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bank", type=Path, default=DEFAULT_BANK)
    parser.add_argument("-k", type=int, default=3, help="results per question (hit@3 needs 3)")
    parser.add_argument("--misses", action="store_true", help="list questions whose memory was not first")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)

    from automem.config import Config
    from automem.paths import Location
    from automem.core.store import open_store

    bank = load_bank(args.bank)
    with tempfile.TemporaryDirectory(prefix="automem-recall-") as tmp:
        store = open_store(Location.resolve(hermes_home=tmp), Config())
        try:
            result = evaluate(store, bank, args.k)
        finally:
            store.close()
    hit3 = result["figures"]["all"]["hit@3"]
    ok = hit3 >= HIT3_TARGET and not result["not_new"]
    if args.json:
        print(json.dumps({**result, "target_hit@3": HIT3_TARGET, "met": ok}, ensure_ascii=False))
        return 0 if ok else 1
    print(f"{result['memories']} memories loaded through the write path in {result['load_seconds']} s; "
          f"{result['questions']} questions; median search {result['search_ms_median']} ms")
    for p in result["not_new"]:
        print(f"  NOT NEW: {p['id']} {p['text']!r} -> {p['decision']} ({p['reason']})")
    print(f"\n{'':<22}{'n':>4}{'hit@1':>9}{'hit@3':>9}")
    for name, f in result["figures"].items():
        print(f"{name:<22}{f['n']:>4}{f['hit@1']:>9.1%}{f['hit@3']:>9.1%}")
    if args.misses:
        print("\nnot first:")
        for r in result["misses"]:
            where = "miss" if r["rank"] is None else f"rank {r['rank'] + 1}"
            print(f"  [{r['profile']}/{r['lang']}{'/cross' if r['cross'] else ''}] {where}: {r['question']} "
                  f"(want {','.join(r['expect'])}) got {list(zip(r['found'], r['distances']))}")
    print(f"\n{'ok  ' if ok else 'MISS'} hit@3 {hit3:.1%} (target {HIT3_TARGET:.0%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
