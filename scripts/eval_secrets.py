#!/usr/bin/env python3
"""Evaluate automem's secret patterns (automem.text) on the corpora tests/data/secret_shapes*.json.

A secret shape is caught when the write path's check finds it (`find_secret` on the normalised text) and
`redact_secrets` leaves none of its secret substrings, in the raw text and in the normalised text. A look-alike
survives when `find_secret` finds nothing and `redact_secrets` changes nothing. Figures per split: `tune` and
`tune2` to `tune5` (what the patterns were written against), `holdout` (written with `tune`, not looked at while
tuning) and `holdout2` (written blind to the code by someone else, copied in before any rule changed). Held-out
parts print aggregate figures only, even with --failures, so tuning never sees their entries. Then the everyday
texts of the project's other corpora (the dedup pairs and corpus, the recall bank, the sample conversation), none
of which holds a secret: every one flagged there is a false positive.

    python -m scripts.eval_secrets [--split tune|tune2|...|tune5|holdout|holdout2] [--failures] [--json]

Exit 1 when a secret is missed or a look-alike is changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from automem.text import find_secret, normalise, redact_secrets
from scripts.harness import DATA, header, print_json

SPLITS = ("tune", "tune2", "tune3", "tune4", "tune5", "holdout", "holdout2")
BLIND = frozenset({"holdout", "holdout2"})  # their misses are counted, never listed


def corpus_files() -> list[Path]:
    return sorted(DATA.glob("secret_shapes*.json"))


def load(paths: list[Path] | None = None) -> dict:
    """Every corpus file's secrets and look-alikes, concatenated (each entry carries its split)."""
    out: dict = {"secrets": [], "lookalikes": []}
    for path in paths if paths is not None else corpus_files():
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        out["secrets"] += data["secrets"]
        out["lookalikes"] += data["lookalikes"]
    return out


def secret_failure(entry: dict) -> str | None:
    """Why a secret shape is not caught (None: caught)."""
    text = entry["text"]
    if find_secret(normalise(text)) is None:
        return "not detected"
    for form in (text, normalise(text)):
        redacted = redact_secrets(form)
        left = [s for s in entry["secret"] if normalise(s) in redacted or s in redacted]
        if left:
            return f"left after redaction: {left[0]!r} in {redacted!r}"
    return None


def lookalike_failure(entry: dict) -> str | None:
    """Why a look-alike does not survive (None: survives)."""
    text = entry["text"]
    kind = find_secret(normalise(text))
    if kind is not None:
        return f"detected as {kind}"
    if redact_secrets(text) != text:
        return f"changed to {redact_secrets(text)!r}"
    return None


def evaluate(data: dict, split: str | None = None) -> dict:
    out: dict = {}
    for name in SPLITS:
        if split and name != split:
            continue
        secrets = [e for e in data["secrets"] if e["split"] == name]
        looks = [e for e in data["lookalikes"] if e["split"] == name]
        if not secrets and not looks:
            continue
        missed = [(e["id"], why) for e in secrets if (why := secret_failure(e))]
        changed = [(e["id"], why) for e in looks if (why := lookalike_failure(e))]
        out[name] = {"secrets": len(secrets), "caught": len(secrets) - len(missed), "missed": missed,
                     "lookalikes": len(looks), "survived": len(looks) - len(changed), "changed": changed}
    return out


def ordinary_texts() -> list[str]:
    """Every text of tests/data's other corpora (memories and questions people write; no secrets in them)."""
    texts: set[str] = set()

    def walk(obj) -> None:
        if isinstance(obj, str):
            texts.add(obj)
        elif isinstance(obj, dict):
            for key, value in obj.items():
                if key not in ("id", "label", "lang", "split", "domain", "kind"):
                    walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    data = DATA
    for path in [data / "dedup_pairs.jsonl", *sorted((data / "dedup_corpus").glob("*.jsonl"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                walk(json.loads(line))
    for path in (data / "recall_bank.json", data / "sample_conversation.json"):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return sorted(t for t in texts if len(t) >= 5)


def false_positives(texts: list[str]) -> list[tuple[str, str]]:
    out = []
    for text in texts:
        kind = find_secret(normalise(text)) or ("changed by redaction" if redact_secrets(text) != text else None)
        if kind:
            out.append((text, kind))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, action="append", help="a corpus file (default: every tests/data/"
                    "secret_shapes*.json); may be repeated")
    ap.add_argument("--split", choices=SPLITS)
    ap.add_argument("--failures", action="store_true", help="list every miss")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = evaluate(load(args.file), args.split)
    for name in BLIND & set(result):  # aggregate figures only
        result[name]["missed"] = len(result[name]["missed"])
        result[name]["changed"] = len(result[name]["changed"])
    texts = ordinary_texts()
    flagged = false_positives(texts)
    result["ordinary"] = {"texts": len(texts), "flagged": len(flagged), "examples": flagged[:20]}
    if args.json:
        print_json(result, ensure_ascii=False, indent=1)
    else:
        print(header("eval_secrets"))
        for name, r in result.items():
            if name == "ordinary":
                print(f"ordinary texts of the other corpora flagged as secrets: {r['flagged']}/{r['texts']}")
                for text, kind in r["examples"] if args.failures else []:
                    print(f"  flagged ({kind}): {text[:120]}")
                continue
            print(f"{name:<8} secrets caught {r['caught']}/{r['secrets']} "
                  f"({100.0 * r['caught'] / max(1, r['secrets']):.1f}%), look-alikes unchanged "
                  f"{r['survived']}/{r['lookalikes']} ({100.0 * r['survived'] / max(1, r['lookalikes']):.1f}%)")
            if args.failures and name not in BLIND:
                for rid, why in r["missed"]:
                    print(f"  missed  {rid}: {why}")
                for rid, why in r["changed"]:
                    print(f"  changed {rid}: {why}")
    bad = any(r.get("missed") or r.get("changed") for r in result.values()) or result["ordinary"]["flagged"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
