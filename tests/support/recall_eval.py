"""The recall banks (tests/data/recall_bank*.json) and their evaluation: what tests/test_recall_quality.py checks
and what `python -m scripts.eval_recall` and `python -m scripts.tune_recall` print.

A bank holds memories {"id", "text", "wing", "profile", "lang", "distractor_of"?} and questions {"question",
"expect": [memory ids], "profile", "lang", "cross"}. Its memories go in through the write path; then two measures:
search (each question asked with `Store.recall(question, k, profile)`) and the first turn (what a fresh Hermes
session shows before the model answers, one new process per question)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support.processes import child_env, processes_naming, stop_processes_under

DATA = Path(__file__).resolve().parent.parent / "data"
DEFAULT_BANK = DATA / "recall_bank.json"
HELDOUT_BANK = DATA / "recall_bank_heldout.json"


def load_bank(path: Path = DEFAULT_BANK) -> dict:
    """A bank, every question's expected memories checked to exist."""
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


def groups(rows: list[dict]) -> dict[str, list[dict]]:
    """The rows overall, by question language, same- vs cross-language, and by profile."""
    out = {
        "all": rows,
        "question zh": [r for r in rows if r["lang"] == "zh"],
        "question en": [r for r in rows if r["lang"] == "en"],
        "same language": [r for r in rows if not r["cross"]],
        "cross-language": [r for r in rows if r["cross"]],
    }
    for profile in sorted({r["profile"] for r in rows}):
        out[f"profile {profile}"] = [r for r in rows if r["profile"] == profile]
    return out


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

    return {"figures": {name: figures(subset) for name, subset in groups(rows).items()},
            "search_ms_median": round(statistics.median(latencies), 1) if latencies else None,
            "misses": [r for r in rows if r["rank"] is None or r["rank"] > 0]}


def evaluate(store, bank: dict, k: int = 3) -> dict:
    """Load the bank into `store` and ask every question: the figures, the misses, what was not stored as new."""
    started = time.perf_counter()
    mapping, problems = load_into(store, bank)
    load_s = time.perf_counter() - started
    result = ask_all(store, bank, mapping, k)
    result.update(memories=len(bank["memories"]), questions=len(bank["questions"]), not_new=problems,
                  distractors=sum(bool(m.get("distractor_of")) for m in bank["memories"]),
                  load_seconds=round(load_s, 2), mapping=mapping,
                  stored_texts={b: m.text for b, m in zip(mapping, store.get(list(mapping.values())))})
    return result


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
    """Whether a memory's text appears in a block as recall shows it."""
    return bool(memory_text.strip()) and shown_form(memory_text) in shown_form(shown)


# -- the first turn of a fresh Hermes session ---------------------------------------------------------------------
# Run in a new process per question: the provider's start path exactly as Hermes drives it for `hermes chat -q`.
_FIRST_TURN_CHILD = r"""
import json, sys, time
args = json.loads(sys.stdin.read())
started = time.perf_counter()
from automem.hermes.session import HermesSession
sess = HermesSession.start(args["home"], session_id=args["session_id"])
block = sess.system_prompt_block() or ""
pre = sess.prefetch(args["question"]) or ""
sess.shutdown()
print(json.dumps({"block": block, "pre": pre, "ms": round((time.perf_counter() - started) * 1000, 1)},
                 ensure_ascii=False))
"""


def profile_home(root: Path, profile: str) -> Path:
    """The HERMES_HOME Hermes gives a profile's process: the root for `default`, else `<root>/profiles/<name>`
    (`automem.paths.resolve_root_and_profile` reads the profile back from it)."""
    return root if profile == "default" else root / "profiles" / profile


def session_env(root: Path, home: Path) -> dict:
    """A session process's environment: HERMES_HOME = the profile's home, HOME inside the root, this checkout on
    PYTHONPATH, none of the caller's AUTOMEM_* settings."""
    user_home = root / "user-home"  # never the real ~ (nor a real ~/.hermes)
    user_home.mkdir(exist_ok=True)
    return child_env(home, home=user_home, PYTHONUNBUFFERED="1")


def first_turn_once(root: Path, question: dict, session_id: str, timeout: float = 120.0) -> dict:
    """One fresh process: start a session, its system-prompt block, the first prefetch, shutdown."""
    home = profile_home(root, question["profile"])
    home.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"home": str(home), "session_id": session_id,
                          "question": question["question"]}, ensure_ascii=False)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _FIRST_TURN_CHILD], input=payload, capture_output=True, text=True,
                          env=session_env(root, home), cwd=str(root), timeout=timeout)
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
    left = stop_processes_under(root)

    def figures(subset: list[dict]) -> dict:
        n = len(subset)

        def rate(key: str) -> float | None:
            return round(sum(bool(r[key]) for r in subset) / n, 4) if n else None

        only_pre = round(sum(r["in_prefetch"] and not r["in_block"] for r in subset) / n, 4) if n else None
        return {"n": n, "first_turn": rate("hit"), "in_block": rate("in_block"), "in_prefetch": rate("in_prefetch"),
                "prefetch_only": only_pre}

    ms = [r["wall_ms"] for r in rows]
    return {"figures": {name: figures(subset) for name, subset in groups(rows).items()},
            "warmup": {"question": warm["question"], "hit": warm["hit"], "in_block": warm["in_block"],
                       "in_prefetch": warm["in_prefetch"], "wall_ms": warm["wall_ms"], "error": warm["error"]},
            "first_question_after_warmup": {k: rows[0][k] for k in ("question", "hit", "wall_ms")} if rows else None,
            "resident_after_warmup": [{"pid": p, "cmdline": c} for p, c in after_warmup],
            "resident_warm": bool(after_warmup),
            "resident_ready_after_s": ready_s,
            "stopped_at_end": [{"pid": p, "cmdline": c} for p, c in left],
            "total_seconds": round(total_s, 1), "process_ms_median": round(statistics.median(ms), 1) if ms else None,
            "errors": [{"question": r["question"], "error": r["error"]} for r in rows if r["error"]],
            "misses": [r for r in rows if not r["hit"]]}


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
        stop_processes_under(root)
    return result, ft
