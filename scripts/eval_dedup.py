#!/usr/bin/env python3
"""Evaluate the write path's duplicate / update / new decision on the labelled pairs.

Each pair of tests/data/dedup_pairs.jsonl is embedded with the offline encoder (`automem.core.embeddings.embed`), its
cosine distance computed, and `automem.core.dedup.decide` run with the shipped default thresholds (`Config()`), the
existing memory being the only neighbour. No judge: these are the cheap checks' own answers.

Expected: restatement -> duplicate; changed_value -> update (new is acceptable: the new fact is kept);
related -> new (update acceptable); unrelated -> new. Targets: >= 95% of restatements are duplicates;
>= 97% of changed_value + related keep the new fact; 100% of unrelated are new. Exit 1 when one is missed.

    python scripts/eval_dedup.py [--json] [--split dev|holdout] [--failures] [--file PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from automem.config import Config  # noqa: E402
from automem.core.dedup import Neighbour, Thresholds, decide  # noqa: E402

DEFAULT_FILE = REPO / "tests" / "data" / "dedup_pairs.jsonl"
LABELS = ("restatement", "changed_value", "related", "unrelated")
ACTIONS = ("duplicate", "update", "new")
ACCEPTED = {"restatement": {"duplicate"}, "changed_value": {"update", "new"}, "related": {"new", "update"},
            "unrelated": {"new"}}
PREFERRED = {"restatement": "duplicate", "changed_value": "update", "related": "new", "unrelated": "new"}
TARGETS = {"restatement_duplicate": 0.95, "new_fact_kept": 0.97, "unrelated_new": 1.0}


def load_pairs(path: Path = DEFAULT_FILE) -> list[dict]:
    pairs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                if row.get("label") not in LABELS or row.get("lang") not in ("zh", "en", "mixed"):
                    raise ValueError(f"{path}:{n}: label must be one of {LABELS}, lang zh|en|mixed")
                pairs.append(row)
    return pairs


def distances(pairs: list[dict], embed=None) -> list[float]:
    """Cosine distance of each pair, embedding every distinct text once."""
    if embed is None:
        from automem.core.embeddings import embed
    texts = sorted({p[k] for p in pairs for k in ("existing", "candidate")})
    vectors = dict(zip(texts, embed(texts)))
    return [1.0 - sum(x * y for x, y in zip(vectors[p["existing"]], vectors[p["candidate"]])) for p in pairs]


def evaluate(pairs: list[dict], dists: list[float], th: Thresholds) -> dict:
    """Confusion table, per-language accuracy, the three targets and the failed pairs."""
    confusion = {label: {a: 0 for a in ACTIONS} for label in LABELS}
    by_lang: dict[str, list[int]] = {}
    borderline = 0
    failures = []
    for pair, dist in zip(pairs, dists):
        v = decide(pair["candidate"], [Neighbour("existing", pair["existing"], dist)], th)
        confusion[pair["label"]][v.action] += 1
        ok = v.action in ACCEPTED[pair["label"]]
        by_lang.setdefault(pair["lang"], [0, 0])
        by_lang[pair["lang"]][0] += ok
        by_lang[pair["lang"]][1] += 1
        borderline += v.borderline
        if not ok:
            failures.append({**pair, "distance": round(dist, 3), "decision": v.action, "reason": v.reason,
                             "borderline": v.borderline})

    def share(labels, actions) -> float:
        total = sum(sum(confusion[lb].values()) for lb in labels)
        return sum(confusion[lb][a] for lb in labels for a in actions) / total if total else 1.0

    figures = {
        "restatement_duplicate": share(["restatement"], ["duplicate"]),
        "new_fact_kept": share(["changed_value", "related"], ["update", "new"]),
        "unrelated_new": share(["unrelated"], ["new"]),
    }
    strict = sum(confusion[lb][PREFERRED[lb]] for lb in LABELS) / max(1, len(pairs))
    return {
        "pairs": len(pairs),
        "thresholds": th.__dict__,
        "confusion": confusion,
        "accuracy_by_lang": {lang: round(ok / n, 4) for lang, (ok, n) in sorted(by_lang.items())},
        "accuracy": round(sum(ok for ok, _ in by_lang.values()) / max(1, len(pairs)), 4),
        "strict_accuracy": round(strict, 4),  # changed_value -> update and related -> new only
        "borderline": borderline,
        "targets": {k: {"value": round(v, 4), "target": TARGETS[k], "met": v >= TARGETS[k]} for k, v in figures.items()},
        "failures": failures,
    }


def print_report(result: dict, show_failures: bool) -> None:
    print(f"{result['pairs']} pairs; thresholds same={result['thresholds']['same']} "
          f"paraphrase={result['thresholds']['paraphrase']} related={result['thresholds']['related']}")
    print(f"\n{'label':<15}" + "".join(f"{a:>11}" for a in ACTIONS) + f"{'total':>8}")
    for label in LABELS:
        row = result["confusion"][label]
        print(f"{label:<15}" + "".join(f"{row[a]:>11}" for a in ACTIONS) + f"{sum(row.values()):>8}")
    print("\naccuracy (accepted decisions) by language: "
          + ", ".join(f"{k} {v:.1%}" for k, v in result["accuracy_by_lang"].items())
          + f"; all {result['accuracy']:.1%}; strict {result['strict_accuracy']:.1%}; "
            f"borderline (a judge would be asked) {result['borderline']}")
    print()
    for name, t in result["targets"].items():
        print(f"{'ok  ' if t['met'] else 'MISS'} {name:<22} {t['value']:.1%} (target {t['target']:.0%})")
    if show_failures and result["failures"]:
        print("\nfailures:")
        for f in result["failures"]:
            print(f"  [{f['lang']}/{f['label']}] d={f['distance']:.3f} -> {f['decision']}"
                  f"{' (borderline)' if f['borderline'] else ''}: {f['existing']} | {f['candidate']} :: {f['reason']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--split", choices=("dev", "holdout", "holdout2"), help="only the pairs of one split")
    parser.add_argument("--failures", action="store_true", help="list the pairs decided wrongly")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)

    pairs = load_pairs(args.file)
    if args.split:
        pairs = [p for p in pairs if p.get("split", "dev") == args.split]
    started = time.perf_counter()
    dists = distances(pairs)
    result = evaluate(pairs, dists, Thresholds.from_config(Config()))
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print_report(result, args.failures)
    return 0 if all(t["met"] for t in result["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
