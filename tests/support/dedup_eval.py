"""The labelled dedup corpus (tests/data/dedup_corpus/) and its evaluation through the real write path: what
tests/test_dedup.py checks on the tuned parts and `python -m scripts.eval_dedup` prints for every part.

A pair is {"existing", "candidate", "label": restatement | both_true | replaces, "wing", ...}. Every pair goes
through `write_path.remember` in isolation (one store, each pair its own profile, no shared wing): the existing
memory first, then the candidate; offline (the rules alone) or with a scripted judge that answers as the label
says (a fake OpenAI-compatible server on 127.0.0.1)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
CORPUS = DATA / "dedup_corpus"
PARTS = {"tune": CORPUS / "tune.jsonl", "holdout": CORPUS / "holdout.jsonl",
         "numbers": CORPUS / "holdout_numbers.jsonl", "kinds": CORPUS / "holdout_kinds.jsonl",
         "shapes": CORPUS / "holdout_29.jsonl", "shapes2": CORPUS / "holdout_29b.jsonl",
         "shapes3": CORPUS / "holdout_29c.jsonl", "shapes4": CORPUS / "holdout_29d.jsonl",
         "shapes5": CORPUS / "holdout_29e.jsonl", "shapes6": CORPUS / "holdout_29f.jsonl",
         "shapes7": CORPUS / "holdout_29g.jsonl", "shapes8": CORPUS / "holdout_29h.jsonl",
         "shapes9": CORPUS / "holdout_29i.jsonl", "shapes10": CORPUS / "holdout_29j.jsonl",
         "shapes11": CORPUS / "holdout_29k.jsonl", "shapes12": CORPUS / "holdout_29l.jsonl",
         "shapes13": CORPUS / "holdout_29m.jsonl", "shapes14": CORPUS / "holdout_29n.jsonl",
         "shapes15": CORPUS / "holdout_29o.jsonl", "shapes16": CORPUS / "holdout_29p.jsonl",
         "shapes17": CORPUS / "holdout_29q.jsonl", "shapes18": CORPUS / "holdout_29r.jsonl",
         "shapes19": CORPUS / "holdout_29s.jsonl",
         # tuning probes, each written blind by another writer (tests/data/dedup_corpus/probes/README.md)
         "probes18": CORPUS / "probes" / "probes18.jsonl", "probes19": CORPUS / "probes" / "probes19.jsonl",
         "probes20": CORPUS / "probes" / "probes20.jsonl", "probes21": CORPUS / "probes" / "probes21.jsonl",
         "probes22": CORPUS / "probes" / "probes22.jsonl", "probes23": CORPUS / "probes" / "probes23.jsonl",
         "probes24": CORPUS / "probes" / "probes24.jsonl", "probes25": CORPUS / "probes" / "probes25.jsonl",
         "probes26": CORPUS / "probes" / "probes26.jsonl", "probes27": CORPUS / "probes" / "probes27.jsonl",
         "probes28": CORPUS / "probes" / "probes28.jsonl", "probes29": CORPUS / "probes" / "probes29.jsonl",
         "probes30": CORPUS / "probes" / "probes30.jsonl", "probes31": CORPUS / "probes" / "probes31.jsonl",
         "probes32": CORPUS / "probes" / "probes32.jsonl", "probes33": CORPUS / "probes" / "probes33.jsonl",
         "probes34": CORPUS / "probes" / "probes34.jsonl", "probes35": CORPUS / "probes" / "probes35.jsonl",
         "probes36": CORPUS / "probes" / "probes36.jsonl", "probes37": CORPUS / "probes" / "probes37.jsonl",
         "old": DATA / "dedup_pairs.jsonl"}
HELD_OUT = {"holdout", "numbers", "kinds", "shapes", "shapes2", "shapes3", "shapes4", "shapes5", "shapes6",
            "shapes7", "shapes8", "shapes9", "shapes10", "shapes11", "shapes12",
            "shapes13", "shapes14", "shapes15", "shapes16", "shapes17",
            "shapes18", "shapes19"}
# The later held-out parts' writers numbered their pairs from 1 again: a prefix per part keeps the ids apart.
ID_PREFIX = {"shapes": "s29-", "shapes2": "s29b-", "shapes3": "s29c-", "shapes4": "s29d-", "shapes5": "s29e-",
             "shapes6": "s29f-", "shapes7": "s29g-", "shapes8": "s29h-",
             "shapes9": "s29i-", "shapes10": "s29j-", "shapes11": "s29k-", "shapes12": "s29l-",
             "shapes13": "s29m-", "shapes14": "s29n-", "shapes15": "s29o-",
             "shapes16": "s29p-", "shapes17": "s29q-", "shapes18": "s29r-",
             "shapes19": "s29s-"}
MODES = ("offline", "judge", "settle")
LABELS = ("restatement", "both_true", "replaces")
OLD_LABELS = {"restatement": "restatement", "changed_value": "replaces", "related": "both_true",
              "unrelated": "both_true"}
ANSWER = {"restatement": "duplicate", "both_true": "new", "replaces": "update"}  # what a correct judge says
ACTIONS = ("duplicate", "update", "new")  # and, after a settle, "lost": neither of the two is active


def load_pairs(part: str) -> list[dict]:
    """The pairs of one part; the old four-label file is read in the three labels."""
    pairs = []
    with open(PARTS[part], encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if part == "old":
                row = {**row, "label": OLD_LABELS[row["label"]], "wing": row.get("wing", "user"),
                       "id": row.get("id", f"old{n}")}
            if row.get("label") not in LABELS or row.get("wing") not in ("user", "episodic", "instruction"):
                raise ValueError(f"{PARTS[part]}:{n}: label must be one of {LABELS} and wing user|episodic|instruction")
            row.setdefault("id", f"{part}{n}")
            row["id"] = ID_PREFIX.get(part, "") + row["id"]
            pairs.append(row)
    return pairs


def judge_rules(pairs: list[dict]) -> list[dict]:
    """Fake-LLM rules: each (new, old) pair of a judge request is answered as its label says, the control pair
    (automem.core.dedup.CONTROLS: a plain fact about the world) "new" as any reading judge would, and any other pair
    gets no usable answer."""
    from automem.text import normalise

    answers = [[normalise(p["candidate"]), normalise(p["existing"]), ANSWER[p["label"]]] for p in pairs]
    # the write path, not the judge, decides what an event's "update" may do
    return [{"match": {"system": "记忆去重助手"}, "per_item": {"answers": answers + _control_answers(), "default": ""}}]


def _control_answers() -> list[list]:
    from automem.core.dedup import CONTROLS

    return [[None, text, "new"] for choices in CONTROLS.values() for text, _ in choices]


def scripted_judge(pairs: list[dict]):
    """The same correct judge as a Python function, for a settle that batches many pairs into one call: each
    (new, old) pair of the corpus is answered as its label says, the control pair "new"; any other pair gets no
    usable answer."""
    from automem.text import normalise

    answers = {(normalise(p["candidate"]), normalise(p["existing"])): ANSWER[p["label"]] for p in pairs}
    controls = {old for _, old, _ in _control_answers()}

    def judge(batch: list[tuple]) -> list[str]:
        return ["new" if old in controls else answers.get((normalise(new), normalise(old)), "")
                for new, old, *_ in batch]

    return judge


def settle_store(store, pairs: list[dict]) -> None:
    """One automatic settle of an offline store with the scripted judge: for each pair's profile, what the next
    session's job does with the pairs kept apart for lack of a judge (`write_path.settle_waiting`, one call of at
    most `dedup_settle_pairs` pairs; here each profile holds at most one). Before issue 29 (the first-contact
    measurement) this was `automem compact --judge`, the only route there was."""
    from automem.core.write_path import settle_waiting

    judge = scripted_judge(pairs)
    for p in pairs:
        settle_waiting(store, judge, f"p-{p['id']}")


def final_action(first, decision, statuses: dict) -> str:
    """What became of a pair once the store settled: duplicate (one of the two is superseded by the other, or the
    candidate was never stored), update (the existing one superseded by the candidate), new (both active), or
    "lost" (neither active)."""
    if decision.action != "new" and decision.action != "update":
        return decision.action
    old, new = statuses.get(first.id), statuses.get(decision.id)
    if old is None or new is None:
        return "new"
    (old_status, old_by), (new_status, new_by) = old, new
    if old_status == "active" and new_status == "active":
        return "new"
    if new_status == "superseded" and new_by == first.id and old_status == "active":
        return "duplicate"
    if old_status == "superseded" and old_by == decision.id and new_status == "active":
        return "update"
    return "lost"


def run_part(part: str, pairs: list[dict], mode: str) -> dict:
    """Each pair through the real write path; returns the decisions and the judge's traffic."""
    from automem.config import Config
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.extract.llm import OpenAIBackend
    from automem.extract.pipeline import make_judge
    from automem.paths import Location

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        location = Location(Path(tmp), "eval")
        config = Config(shared_wings=[], extract_backend="openai", extract_api_key="eval", extract_timeout=30.0)
        fake = None
        if mode == "judge":
            from tests.support.fake_llm import FakeLLM

            fake = FakeLLM(judge_rules(pairs)).start()
            config.extract_base_url = fake.url
        store = Store(location, config)
        details: dict = {}
        judge = make_judge(OpenAIBackend(config), details, config) if mode == "judge" else None
        try:
            firsts = remember(store, [Candidate(p["existing"], wing=p["wing"], profile=f"p-{p['id']}", room="cli")
                                      for p in pairs])
            rows, written = [], []
            for p, first in zip(pairs, firsts):
                before = details.get("judge_pairs", 0)
                [d] = remember(store, [Candidate(p["candidate"], wing=p["wing"], profile=f"p-{p['id']}", room="cli")],
                               judge=judge)
                rows.append({**p, "first": first.action, "decision": d.action, "reason": d.reason,
                             "judged": details.get("judge_pairs", 0) > before})
                written.append((first, d))
            if mode == "settle":
                settle_store(store, pairs)
                statuses = {m.id: (m.status, m.superseded_by) for m in store.iter_records()}
                for row, (first, d) in zip(rows, written):
                    row["offline_decision"], row["decision"] = d.action, final_action(first, d, statuses)
                    row["judged"] = row["decision"] != d.action
        finally:
            store.close()
            if fake is not None:
                fake.stop()
    return {"rows": rows, "judge_pairs": details.get("judge_pairs", 0), "judge_calls": details.get("judge_calls", 0),
            "judge_prompt_tokens": details.get("judge_prompt_tokens", 0),
            "judge_completion_tokens": details.get("judge_completion_tokens", 0),
            "seconds": round(time.perf_counter() - started, 1)}


def figures(rows: list[dict]) -> dict:
    """The confusion table and the four figures of one part and mode."""
    confusion = {label: {a: 0 for a in ACTIONS} for label in LABELS}
    skipped = [r["id"] for r in rows if r["first"] != "new"]  # the existing text was rejected (too short)
    rows = [r for r in rows if r["first"] == "new"]
    for r in rows:
        decision = r["decision"] if r["decision"] in ACTIONS + ("lost",) else "new"
        confusion[r["label"]][decision] = confusion[r["label"]].get(decision, 0) + 1
    n = {label: sum(confusion[label].values()) for label in LABELS}
    lost = (confusion["both_true"]["duplicate"] + confusion["both_true"]["update"] + confusion["replaces"]["duplicate"]
            + sum(confusion[label].get("lost", 0) for label in ("both_true", "replaces")))
    at_risk = n["both_true"] + n["replaces"]

    def share(x: int, total: int) -> dict:
        return {"n": x, "of": total, "share": x / total if total else 0.0}

    return {"pairs": len(rows), "confusion": confusion,
            "restatements_intercepted": share(confusion["restatement"]["duplicate"], n["restatement"]),
            "both_true_kept": share(confusion["both_true"]["new"], n["both_true"]),
            "replaces_update": share(confusion["replaces"]["update"], n["replaces"]),
            "facts_lost": share(lost, at_risk),
            "judged": sum(1 for r in rows if r.get("judged")),
            "existing_not_new": skipped}


def by_group(rows: list[dict], key: str) -> dict:
    """`figures` per value of `key` (lang, wing, domain, kind)."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get(key, "?"), []).append(r)
    return {g: figures(rs) for g, rs in sorted(groups.items())}


def event_exposure(pairs: list[dict]) -> dict:
    """What a judge's "update" of an event could do in this part (`dedup.event_may_replace`): how many both-true
    event pairs a wrong "update" would lose (nothing in the pair says two occurrences), and how many event
    corrections a correct "update" cannot apply (a sign of another occurrence, no correction word); each also for a
    judge that told the control pair apart (`_discerning`), which is taken at its word on more."""
    from automem.core.dedup import event_may_replace

    events = [p for p in pairs if p.get("wing") == "episodic"]
    both = [p for p in events if p["label"] == "both_true"]
    replaces = [p for p in events if p["label"] == "replaces"]
    out = {"both_true": len(both), "replaces": len(replaces)}
    for suffix, discerning in (("", False), ("_discerning", True)):
        out["both_true_exposed" + suffix] = sum(event_may_replace(p["candidate"], p["existing"], discerning)
                                                for p in both)
        out["replaces_refused" + suffix] = sum(not event_may_replace(p["candidate"], p["existing"], discerning)
                                               for p in replaces)
    out["both_true_far_asked"] = sum(_asked_far(p) for p in both)
    return out


def _asked_far(pair: dict) -> bool:
    """Whether the write puts this event pair to a judge as worded far apart (beyond the related distance: within
    SLOT_DISTANCE on a day both name, or found by a date or a kind of event both name): a judge that told the control
    pair apart is then taken at its word on "duplicate" as well, so a wrong one could merge two events of one day."""
    from automem.config import Config
    from automem.core.analysis import analyse
    from automem.core.dedup import SLOT_DISTANCE, Neighbour, Thresholds, decide
    from automem.core.embeddings import embed
    from automem.core.single_valued import filed_under

    va, vb = embed([pair["existing"], pair["candidate"]])
    distance = 1.0 - sum(x * y for x, y in zip(va, vb))
    th = Thresholds.from_config(Config())
    a, b = analyse(pair["existing"]), analyse(pair["candidate"])
    found = distance > SLOT_DISTANCE and bool(filed_under(a, "episodic") & filed_under(b, "episodic"))
    if distance <= th.related:
        return False
    return "m" in decide(pair["candidate"], [Neighbour("m", pair["existing"], distance, by_slot=found)], th,
                         event=True).far
