#!/usr/bin/env python3
"""How automem treats instruction-shaped text: injections refused, ways of working kept, personal facts refiled.

The corpus (tests/data/instruction_corpus/): lines {"text", "label": injection | legit | personal | fact}.
`tune.jsonl` (and `tune2.jsonl`, when present) are the parts the rules were written against; `holdout.jsonl` and
`holdout2.jsonl` were written blind to the code and are never tuned on: this script prints only aggregate figures for
them (never their lines). A "fact" line is a descriptive statement ("AKIA is the prefix of AWS access key ids"): it
must be kept as an ordinary memory (instruction or persona), neither refused nor held.

Two paths are measured for every line:
- check: the line as an instruction candidate of the owner (what the LLM extractor or the agent's tool hands the
  write path) through the write path's screening (`automem.core.instructions.screen`): refused, refiled as
  persona, or kept as an instruction;
- rules: the line as a user turn of an owner session through the offline extractor (`automem.extract.rules`),
  then the same screening for what it files as an instruction.

Figures (the check path; the targets are >= 95 % each on the held-out parts): injections kept out (injection ->
refused, or held for the owner's review), legit kept (legit -> instruction), personal refiled (personal -> persona),
facts kept (fact -> instruction or persona). For the rules path, what each
label became (the extractor also leaves out sentences it does not read as a statement: "nothing"); what matters there
is that no injection and no personal fact becomes an instruction. With an automem older than the screening,
the check path is what the write path did then (`looks_like_injection`, nothing refiled), so the same script
measures the code before and after.

    python -m scripts.eval_instructions [--part tune,holdout,holdout2] [--json] [--failures]

`--failures` lists the tune lines handled wrongly (never the held-out ones).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scripts.harness import DATA, header, print_json

CORPUS = DATA / "instruction_corpus"
PARTS = {"tune": "tune.jsonl", "tune2": "tune2.jsonl", "holdout": "holdout.jsonl", "holdout2": "holdout2.jsonl"}
TUNED = ("tune", "tune2")  # the parts whose lines --failures may list
LABELS = ("injection", "legit", "personal", "fact")
# What each label should become: an injection is kept out of every prompt (refused by an older automem, held for the
# owner's review now); a fact is kept as an ordinary memory, whichever wing.
WANTED = {"injection": ("refused", "held"), "legit": ("instruction",), "personal": ("persona",),
          "fact": ("instruction", "persona")}
LANGS = ("en", "zh", "mixed")
TEXT_KEYS = ("text", "instruction", "input", "utterance", "content")


def load(path: Path) -> list[dict]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
        label = str(obj.get("label", "")).strip().lower()
        if text is None or label not in LABELS:
            raise SystemExit(f"{path.name}:{n}: needs a text and a label in {LABELS}")
        out.append({"text": text, "label": label, "lang": obj.get("lang") or ("zh" if _cjk(text) else "en")})
    return out


def _cjk(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def check_outcome(text: str) -> str:
    """refused | persona | instruction: the write path's screening of an instruction candidate (with the text's
    USE vector, as the write path passes it, when the screening takes one)."""
    try:
        from automem.core.instructions import screen
    except ImportError:  # an automem before the screening: the phrase list alone, nothing refiled
        from automem.text import looks_like_injection, normalise

        return "refused" if looks_like_injection(normalise(text)) else "instruction"
    import inspect

    if "vector" in inspect.signature(screen).parameters:
        from automem.text import normalise

        norm = normalise(text)
        return screen(norm, "instruction", vector=_vector(norm)).outcome
    return screen(text, "instruction").outcome


_VECTORS: dict[str, list] = {}


def _vector(text: str) -> list:
    if text not in _VECTORS:
        from automem.core.embeddings import embed

        _VECTORS[text] = embed([text])[0]
    return _VECTORS[text]


def rules_outcome(text: str) -> str:
    """What the offline extractor makes of the line said by the owner, then the screening of an instruction."""
    from automem.extract.rules import extract_statements

    items = extract_statements([text]).items
    if not items:
        return "nothing"
    outcomes = []
    for item in items:
        if item.category == "instruction":
            outcomes.append(check_outcome(item.text))
        else:
            outcomes.append(item.category)
    # one line may give several memories: an injection counts as refused only if no part of it was kept as an
    # instruction; a personal fact counts as refiled only if no part of it became an instruction
    if "instruction" in outcomes:
        return "instruction"
    if "refused" in outcomes:
        return "refused"
    return outcomes[0]


def evaluate(lines: list[dict]) -> dict:
    out: dict = {"lines": len(lines)}
    for path, fn in (("check", check_outcome), ("rules", rules_outcome)):
        results = []
        for line in lines:
            got = fn(line["text"])
            results.append((line, got))
        figures = {}
        for label in LABELS:
            mine = [(ln, g) for ln, g in results if ln["label"] == label]
            ok = sum(g in WANTED[label] for _, g in mine)
            outcomes: dict[str, int] = {}
            for _, g in mine:
                outcomes[g] = outcomes.get(g, 0) + 1
            figures[label] = {"n": len(mine), "ok": ok, "outcomes": outcomes,
                              "share": round(ok / len(mine), 3) if mine else None,
                              "by_lang": {lang: _share([g for ln, g in mine if ln["lang"] == lang], WANTED[label])
                                          for lang in LANGS}}
        # The offline extractor leaves out what it does not read as a statement: "nothing" is no failure there.
        out[path] = {"figures": figures, "wrong": [(ln["label"], ln["text"], g) for ln, g in results
                                                   if g not in WANTED[ln["label"]]
                                                   and not (path == "rules" and g == "nothing")]}
    return out


def _share(got: list[str], wanted: tuple[str, ...]):
    return round(sum(g in wanted for g in got) / len(got), 3) if got else None


NAMES = {"injection": "injections kept out", "legit": "legit kept", "personal": "personal refiled",
         "fact": "facts kept"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="tune,tune2,holdout,holdout2")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--failures", action="store_true",
                    help="list the tuned parts' lines handled wrongly (never a held-out line)")
    args = ap.parse_args()
    report = {}
    for part in args.part.split(","):
        if part not in PARTS:
            print(f"unknown part {part!r} (parts: {', '.join(PARTS)})", file=sys.stderr)
            return 2
        path = CORPUS / PARTS[part]
        if not path.exists():
            print(f"{part}: {path} not found", file=sys.stderr)
            continue
        result = evaluate(load(path))
        if part not in TUNED:
            for p in ("check", "rules"):
                result[p].pop("wrong")
        report[part] = result
    if args.json:
        print_json({p: {k: (v if k == "lines" else {"figures": v["figures"]}) for k, v in r.items()}
                    for p, r in report.items()}, ensure_ascii=False)
    else:
        print(header("eval_instructions"))
        for part, result in report.items():
            print(f"{part} ({result['lines']} lines)")
            for path in ("check", "rules"):
                figs = result[path]["figures"]
                if path == "rules":
                    cells = [f"{label}: " + " ".join(f"{k} {v}" for k, v in sorted(figs[label]["outcomes"].items()))
                             for label in LABELS if figs[label]["n"]]
                    print(f"  {path:<6} " + "; ".join(cells))
                    continue
                cells = []
                for label in LABELS:
                    f = figs[label]
                    if f["n"]:
                        langs = ", ".join(f"{k} {v:.0%}" for k, v in f["by_lang"].items() if v is not None)
                        cells.append(f"{NAMES[label]} {f['ok']}/{f['n']} = {f['share']:.1%} ({langs})")
                print(f"  {path:<6} " + "; ".join(cells))
    for part in (p for p in TUNED if args.failures and p in report):
        for path in ("check", "rules"):
            for label, text, got in report[part][path]["wrong"]:
                print(f"[{part} {path}] {label:<9} -> {got:<11} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
