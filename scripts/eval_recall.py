#!/usr/bin/env python3
"""Recall quality: do questions worded unlike the memories find them, by search and on a session's first turn?

Loads tests/data/recall_bank.json (or --bank PATH, or --heldout: tests/data/recall_bank_heldout.json) into a fresh
store in a temporary Hermes root through the write path (`automem.core.write_path.remember`), then measures:

- search: each question asked with `Store.recall(question, k=3, profile=...)` (the profile's visibility: its own
  memories plus the shared wings of the others); hit@1 / hit@3 when an expected memory is first / in the top 3.
- first turn: what a fresh Hermes session shows before the model answers the first message, in a NEW process per
  question (what every one-shot `hermes chat -q` and every kanban worker gets): with HERMES_HOME = the temporary
  root (or `<root>/profiles/<name>`), `HermesSession.start(home, session_id=...)`, `system_prompt_block()`, then
  `prefetch(question)`, then `shutdown()`. A hit when the text of an expected memory (as stored, normalised as recall
  shows it) appears in the system-prompt block or the prefetch block. One warm-up question runs first (so a
  resident recall process, if automem starts one, is up); it is reported on its own, the figures come from one
  fresh process per question after it. Anything still running with the temporary root in its command line or
  environment at the end (a resident, a drainer) is stopped.

Prints the figures overall, by question language, same- vs cross-language and by profile. Exit 1 when a target is
missed (search hit@3 >= 95%, first-turn >= 92%) or a bank memory was not stored as new.

    python scripts/eval_recall.py [--heldout | --bank PATH] [--first-turn | --search-only] [--json] [--misses] [-k 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.processes import processes_naming, stop  # noqa: E402

DEFAULT_BANK = REPO / "tests" / "data" / "recall_bank.json"
HELDOUT_BANK = REPO / "tests" / "data" / "recall_bank_heldout.json"
HIT3_TARGET = 0.95
FIRST_TURN_TARGET = 0.92


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

    groups = _groups(rows)
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
                  distractors=sum(bool(m.get("distractor_of")) for m in bank["memories"]),
                  load_seconds=round(load_s, 2), mapping=mapping,
                  stored_texts={b: m.text for b, m in zip(mapping, store.get(list(mapping.values())))})
    return result


# -- the first turn of a fresh Hermes session ---------------------------------------------------------------------
# Run in a new process per question: the provider's start path exactly as Hermes drives it for `hermes chat -q`.
_FIRST_TURN_CHILD = r"""
import json, sys, time
args = json.loads(sys.stdin.read())
sys.path.insert(0, args["repo"])
started = time.perf_counter()
from automem.hermes.session import HermesSession
sess = HermesSession.start(args["home"], session_id=args["session_id"])
block = sess.system_prompt_block() or ""
pre = sess.prefetch(args["question"]) or ""
sess.shutdown()
print(json.dumps({"block": block, "pre": pre, "ms": round((time.perf_counter() - started) * 1000, 1)},
                 ensure_ascii=False))
"""


def shown_form(text: str) -> str:
    """Text as recall shows it (`automem.core.recall.line_of`: whitespace collapsed, fence markers neutralised);
    applied to both the memory and the blocks, so the comparison does not depend on either."""
    try:
        from automem.text import neutralise_fences
    except ImportError:  # pragma: no cover - an older automem
        def neutralise_fences(t: str) -> str:
            return t
    return neutralise_fences(" ".join(str(text).split()))


def shown_in(memory_text: str, shown: str) -> bool:
    return bool(memory_text.strip()) and shown_form(memory_text) in shown_form(shown)


def profile_home(root: Path, profile: str) -> Path:
    """The HERMES_HOME Hermes gives a profile's process: the root for `default`, else `<root>/profiles/<name>`
    (`automem.paths.resolve_root_and_profile` reads the profile back from it)."""
    return root if profile == "default" else root / "profiles" / profile


def child_env(root: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOMEM_") and k != "GLM_API_KEY"}
    user_home = root / "user-home"  # never the real ~ (nor a real ~/.hermes)
    user_home.mkdir(exist_ok=True)
    env.update(HERMES_HOME=str(home), HOME=str(user_home), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    return env


def first_turn_once(root: Path, question: dict, session_id: str, timeout: float = 120.0) -> dict:
    """One fresh process: start a session, its system-prompt block, the first prefetch, shutdown."""
    home = profile_home(root, question["profile"])
    home.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"repo": str(REPO), "home": str(home), "session_id": session_id,
                          "question": question["question"]}, ensure_ascii=False)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _FIRST_TURN_CHILD], input=payload, capture_output=True, text=True,
                          env=child_env(root, home), cwd=str(root), timeout=timeout)
    wall_ms = round((time.perf_counter() - started) * 1000, 1)
    if proc.returncode != 0:
        return {"block": "", "pre": "", "ms": None, "wall_ms": wall_ms,
                "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_ms"] = wall_ms
    return out


def wait_for_resident(root: Path, limit_s: float = 30.0) -> float | None:
    """Seconds until the root's resident recall process (started by the warm-up) answers a ping; None when this
    automem has none or it did not come up within `limit_s`."""
    try:
        from automem.core import resident_client
        from automem.paths import Location
    except ImportError:
        return None
    loc = Location(root, "default")
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        reply = resident_client.ask(loc, {"op": "ping"}, timeout=1.0)
        if reply and reply.get("ok"):
            return round(time.monotonic() - started, 2)
        time.sleep(0.2)
    return None


def stop_processes_of(root: Path) -> list[tuple[int, str]]:
    """Stop (TERM, then KILL) what this run left behind under `root`; returns what it found."""
    left = processes_naming(root)
    stop(pid for pid, _ in left)
    return left


def _first_turn_row(q: dict, out: dict, expected_texts: list[str]) -> dict:
    in_block = any(shown_in(t, out["block"]) for t in expected_texts)
    in_pre = any(shown_in(t, out["pre"]) for t in expected_texts)
    return {**q, "in_block": in_block, "in_prefetch": in_pre, "hit": in_block or in_pre, "ms": out.get("ms"),
            "wall_ms": out["wall_ms"], "error": out.get("error"),
            "block_lines": out["block"].count("\n- ["), "prefetch_lines": out["pre"].count("\n- ["),
            "prefetch": out["pre"]}


def first_turn(root: Path, bank: dict, stored_texts: dict[str, str], progress=None) -> dict:
    """Every question on the first turn of its own fresh session process, after one warm-up question."""
    questions = bank["questions"]

    def expected(q: dict) -> list[str]:
        return [stored_texts[i] for i in q["expect"] if i in stored_texts]

    started = time.perf_counter()
    warm = _first_turn_row(questions[0], first_turn_once(root, questions[0], "eval-warmup"), expected(questions[0]))
    ready_s = wait_for_resident(root)  # the measure is of a machine where it runs; the cold case is the warm-up
    after_warmup = processes_naming(root)  # a resident the first question started, if automem has one
    rows = []
    for n, q in enumerate(questions):
        rows.append(_first_turn_row(q, first_turn_once(root, q, f"eval-{n}"), expected(q)))
        if progress:
            progress(n + 1, len(questions))
    total_s = time.perf_counter() - started
    left = stop_processes_of(root)

    def figures(subset: list[dict]) -> dict:
        n = len(subset)

        def rate(key: str) -> float | None:
            return round(sum(bool(r[key]) for r in subset) / n, 4) if n else None

        only_pre = round(sum(r["in_prefetch"] and not r["in_block"] for r in subset) / n, 4) if n else None
        return {"n": n, "first_turn": rate("hit"), "in_block": rate("in_block"), "in_prefetch": rate("in_prefetch"),
                "prefetch_only": only_pre}

    groups = _groups(rows)
    ms = sorted(r["wall_ms"] for r in rows)
    return {"figures": {name: figures(subset) for name, subset in groups.items()},
            "warmup": {"question": warm["question"], "hit": warm["hit"], "in_block": warm["in_block"],
                       "in_prefetch": warm["in_prefetch"], "wall_ms": warm["wall_ms"], "error": warm["error"]},
            "first_question_after_warmup": {k: rows[0][k] for k in ("question", "hit", "wall_ms")} if rows else None,
            "resident_after_warmup": [{"pid": p, "cmdline": c} for p, c in after_warmup],
            "resident_warm": bool(after_warmup),
            "resident_ready_after_s": ready_s,
            "stopped_at_end": [{"pid": p, "cmdline": c} for p, c in left],
            "total_seconds": round(total_s, 1), "process_ms_median": ms[len(ms) // 2] if ms else None,
            "errors": [{"question": r["question"], "error": r["error"]} for r in rows if r["error"]],
            "misses": [r for r in rows if not r["hit"]]}


def _groups(rows: list[dict]) -> dict[str, list[dict]]:
    groups = {
        "all": rows,
        "question zh": [r for r in rows if r["lang"] == "zh"],
        "question en": [r for r in rows if r["lang"] == "en"],
        "same language": [r for r in rows if not r["cross"]],
        "cross-language": [r for r in rows if r["cross"]],
    }
    for profile in sorted({r["profile"] for r in rows}):
        groups[f"profile {profile}"] = [r for r in rows if r["profile"] == profile]
    return groups


def measure(bank: dict, root: Path, k: int = 3, with_first_turn: bool = True) -> tuple[dict, dict | None]:
    """Load `bank` into a fresh store at the Hermes root `root` (created), search, close the store (which writes
    the recall snapshot the sessions read), then the first-turn runs. (search result, first-turn result or None);
    whatever the runs left running under `root` is stopped, also on an error."""
    from automem.config import Config
    from automem.core.store import open_store
    from automem.paths import Location

    root.mkdir(parents=True, exist_ok=True)
    ft = None
    try:
        store = open_store(Location.resolve(hermes_home=root), Config())
        try:
            result = evaluate(store, bank, k)
        finally:
            store.close()
        if with_first_turn:
            ft = first_turn(root, bank, result["stored_texts"])
    finally:
        stop_processes_of(root)
    return result, ft


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--bank", type=Path, default=DEFAULT_BANK)
    which.add_argument("--heldout", action="store_true", help=f"the held-out bank ({HELDOUT_BANK.name})")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--first-turn", action="store_true",
                      help="judge the exit status on the first-turn measure only (search is still shown beside it; "
                           "the default judges both)")
    mode.add_argument("--search-only", action="store_true", help="search hit@1/hit@3 only, no session processes")
    parser.add_argument("-k", type=int, default=3, help="results per question (hit@3 needs 3)")
    parser.add_argument("--misses", action="store_true", help="list the questions missed (search: not first)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    bank_path = HELDOUT_BANK if args.heldout else args.bank

    bank = load_bank(bank_path)
    if not args.json:
        print(f"loading {len(bank['memories'])} memories; then {len(bank['questions'])} searches"
              + ("" if args.search_only else " and as many fresh session processes (after one warm-up)") + " ...",
              flush=True)
    with tempfile.TemporaryDirectory(prefix="automem-recall-") as tmp:
        result, ft = measure(bank, Path(tmp) / "hermes", k=args.k, with_first_turn=not args.search_only)
    hit3 = result["figures"]["all"]["hit@3"]
    search_ok = hit3 >= HIT3_TARGET
    ft_rate = ft["figures"]["all"]["first_turn"] if ft else None
    ft_ok = ft is not None and ft_rate >= FIRST_TURN_TARGET and not ft["errors"]
    if args.search_only:
        ok = search_ok
    elif args.first_turn:
        ok = ft_ok
    else:
        ok = search_ok and ft_ok
    ok = ok and not result["not_new"]
    result.pop("mapping", None)
    texts = result.pop("stored_texts", {})
    if args.json:
        print(json.dumps({"bank": str(bank_path), **result, "first_turn": ft, "target_hit@3": HIT3_TARGET,
                          "target_first_turn": FIRST_TURN_TARGET, "met": ok}, ensure_ascii=False))
        return 0 if ok else 1
    print(f"bank {bank_path.relative_to(REPO) if bank_path.is_relative_to(REPO) else bank_path}: "
          f"{result['memories']} memories ({result['distractors']} marked distractors) loaded through the write "
          f"path in {result['load_seconds']} s; {result['questions']} questions; median search "
          f"{result['search_ms_median']} ms")
    for p in result["not_new"]:
        print(f"  NOT NEW: {p['id']} {p['text']!r} -> {p['decision']} ({p['reason']})")
    if ft:
        pids = ", ".join(str(p["pid"]) for p in ft["resident_after_warmup"])
        ready = ft.get("resident_ready_after_s")
        print(f"first turn: {len(bank['questions'])} fresh processes in {ft['total_seconds']} s (median "
              f"{ft['process_ms_median']} ms each, warm-up included in the total); resident recall process after "
              f"the warm-up: {'yes, pids ' + pids if ft['resident_warm'] else 'none seen'}"
              f"{'' if ready is None else ', answering ' + str(ready) + ' s after it'}")
        w = ft["warmup"]
        print(f"  very first question (warm-up, cold): {'hit' if w['hit'] else 'MISS'} in {w['wall_ms']} ms"
              f"{' (' + w['error'] + ')' if w['error'] else ''}; the figures below are the runs after it")
        for e in ft["errors"]:
            print(f"  ERROR: {e['question']}: {e['error']}")
        if ft["stopped_at_end"]:
            stopped = ", ".join(str(p["pid"]) + " " + p["cmdline"][:80] for p in ft["stopped_at_end"])
            print(f"  stopped at the end: {stopped}")
    print(f"\n{'':<22}{'n':>4}{'hit@1':>9}{'hit@3':>9}" + (f"{'1st turn':>10}{'in block':>10}{'prefetch':>10}"
                                                           f"{'pre only':>10}" if ft else ""))
    for name, f in result["figures"].items():
        line = f"{name:<22}{f['n']:>4}{f['hit@1']:>9.1%}{f['hit@3']:>9.1%}"
        if ft:
            g = ft["figures"][name]
            line += (f"{g['first_turn']:>10.1%}{g['in_block']:>10.1%}{g['in_prefetch']:>10.1%}"
                     f"{g['prefetch_only']:>10.1%}")
        print(line)
    if args.misses:
        print("\nsearch, not first:")
        for r in result["misses"]:
            where = "miss" if r["rank"] is None else f"rank {r['rank'] + 1}"
            print(f"  [{r['profile']}/{r['lang']}{'/cross' if r['cross'] else ''}] {where}: {r['question']} "
                  f"(want {','.join(r['expect'])}) got {list(zip(r['found'], r['distances']))}")
        if ft:
            print("\nfirst turn, not shown:")
            for r in ft["misses"]:
                print(f"  [{r['profile']}/{r['lang']}{'/cross' if r['cross'] else ''}] {r['question']} (want "
                      f"{', '.join(i + ' ' + repr(texts.get(i, '?')) for i in r['expect'])}; block "
                      f"{r['block_lines']} lines, prefetch {r['prefetch_lines']} lines)")
    print(f"\n{'ok  ' if search_ok else 'MISS'} search hit@3 {hit3:.1%} (target {HIT3_TARGET:.0%})")
    if ft:
        print(f"{'ok  ' if ft_ok else 'MISS'} first turn {ft_rate:.1%} (target {FIRST_TURN_TARGET:.0%})")
    if result["not_new"]:
        print(f"MISS {len(result['not_new'])} bank memories not stored as new")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
