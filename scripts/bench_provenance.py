#!/usr/bin/env python3
"""Figures of provenance and history (issue 30), printed, never asserted.

    python -m scripts.bench_provenance write [--size 10000] [--writes 40] [--cache DIR] [--precompute] [--json]
    python -m scripts.bench_provenance show [--size 100000] [--shows 200] [--json]

write: the cost of one write through the write path (`remember`) on a store of --size memories: a new memory, a
    new one that fills a single-valued attribute (where the user lives: its old value is looked up by it), a
    restatement (the same text again: a duplicate), an update (a changed version: the old one superseded), a
    job-like batch of 5 candidates (2 new, 2 restated, 1 update), and a new event on a date a stored event names
    (looked up by the date where the code does); p50 and p90 ms (and CPU p50) of --writes each, in
    one process, model loaded and store warm (a search and a recall first). The store is filled once
    (`Store.import_memories` of scripts/stress_store.py's memory bank, real embeddings) into --cache and copied for
    every run, so a run on another commit measures the same store. Where the checked-out code has
    `Candidate.evidence`, every candidate carries one (as extraction gives it): run it on the commit before
    provenance and on this one to compare (on an older commit, copy scripts/ into a `git worktree` of it and run
    from there; see docs/provenance.md). --precompute embeds every text before timing, so what is timed is the
    write path and Chroma alone.
show: `automem.core.history.show` latency on a store of --size memories (filled with `Store.write_records` and
    random unit vectors: show reads records, never vectors), three fifths of them in update chains of 3 values (the
    newest restated and pinned): p50 / p95 / max over --shows ids, half chain heads, half plain ones.

Wall times on a shared machine move with whatever else runs; the figures are one run's.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from scripts.harness import Stopwatch, commit, header, percentile, print_json, temp_root
from scripts.stress_store import memory_bank

NAMES = ("北极星 青松 白鹭 远航 晨曦 磐石 流云 星火 长河 锦鲤 飞鸿 翠竹 银杏 朝阳 明月 清泉 雪松 海燕 金桥 蓝鲸 紫藤 "
         "红枫 玉兰 松鼠 猎户 天鹅 灯塔 琥珀 珊瑚 极光 麋鹿 苍鹰 石榴 杜鹃 橄榄 茉莉 樱桃 火烈鸟 犀牛 海豚 猫头鹰 孔雀 "
         "骆驼 企鹅 袋鼠 熊猫 斑马 长颈鹿 狐狸 刺猬").split()
# What an extracted memory's excerpt looks like: the user's turn, a little longer than the memory.
EXCERPT = "我说过：{text}。这是那一轮对话里的原话，比记忆本身长一些，像用户真正说的那样。"


def figures(values: list[float]) -> dict:
    return {"p50_ms": round(percentile(values, 50), 2), "p90_ms": round(percentile(values, 90), 2), "n": len(values)}


def _fill_template(path: Path, size: int) -> None:
    from automem.config import Config
    from automem.core.store import Store
    from automem.paths import Location

    tmp = path.with_name(path.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    store = Store(Location.resolve(str(tmp)), Config())
    with Stopwatch() as sw:
        store.import_memories(memory_bank(size), batch=500)
    store.close()
    print(f"filled {size} memories in {sw.s:.0f} s", file=sys.stderr)
    tmp.rename(path)


KINDS = ("new", "new_filling_an_attribute", "restated", "update", "batch_of_5", "new_event_on_a_date")


def bench_write(size: int, writes: int, cache: Path, precompute: bool = False) -> dict:
    from automem.config import Config
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    template = cache / f"store-{size}"
    if not template.exists():
        cache.mkdir(parents=True, exist_ok=True)
        _fill_template(template, size)
    has_evidence = "evidence" in Candidate.__dataclass_fields__

    def cand(text: str, session: str, turn: int = 1, wing: str = "user") -> Candidate:
        c = Candidate(text=text, wing=wing, room="auto-extract", added_by="auto-extract", session_id=session)
        if has_evidence:
            from automem.core.provenance import Evidence

            c.evidence = Evidence(excerpt=EXCERPT.format(text=text), speaker="owner", role="user", turn=turn,
                                  origin="extraction", extractor="bench")
        return c

    with temp_root(prefix="automem-bench-prov-") as tmp:
        root = tmp / "root"
        shutil.copytree(template, root)
        store = Store(Location.resolve(str(root)), Config())
        store.embed(["warm up the model"])
        store.search("warm up the store", k=5, profile="default")
        # recall reads the recall index: one left by another version is rebuilt here, not in a timed write
        store.recall("warm up the recall index", k=5, profile="default")
        out: dict = {"size": store.count(), "evidence": has_evidence,
                     "embedding": "precomputed (not timed)" if precompute else "timed"}
        n = writes
        stored = [f"{NAMES[i % len(NAMES)]}项目{i // len(NAMES) or ''}统一使用Python 3.11" for i in range(2 * n + 10)]
        # The values later writes restate or update, and events on the dates later events name: stored once, not
        # timed.
        remember(store, [cand(t, "s0") for t in stored])
        dated = [f"用户{d % 12 + 1}月{d % 28 + 1}日和{NAMES[d % len(NAMES)]}开会" for d in range(n)]
        remember(store, [cand(t, "s0", wing="episodic") for t in dated])
        timings: dict[str, list[float]] = {k: [] for k in KINDS}
        cpu: dict[str, list[float]] = {k: [] for k in timings}
        actions: dict[str, dict[str, int]] = {k: {} for k in timings}

        if precompute:  # every text embedded up front: what is timed is the write path and Chroma, not the model
            vectors: dict[str, list[float]] = {}
            real_embed = store.embed

            def embed(texts):
                missing = [t for t in texts if t not in vectors]
                if missing:
                    vectors.update(zip(missing, real_embed(missing)))
                return [vectors[t] for t in texts]

            store.embed = embed  # type: ignore[method-assign]

        def timed(kind: str, cands: list) -> None:
            c = time.process_time()
            with Stopwatch() as sw:
                decisions = remember(store, cands)
            timings[kind].append(sw.ms)
            cpu[kind].append((time.process_time() - c) * 1000)
            for d in decisions:
                actions[kind][d.action] = actions[kind].get(d.action, 0) + 1

        rng = random.Random(5)
        pairs = [(a, b) for a in NAMES for b in NAMES if a != b]
        rng.shuffle(pairs)
        fresh = iter(pairs)

        def new_text(what: str) -> str:
            a, b = next(fresh)
            return f"The user keeps a {what} about the {a} and {b} garden plan"

        rounds = [("new", [cand(new_text("note"), "s1")]) for i in range(n)]
        slot_texts = [f"The user's friend {a} {b} lives near the river" for a, b in
                      (next(fresh) for _ in range(n))]  # fills an attribute: looked up by it (another holder: new)
        rounds = [r for i in range(n) for r in (
            rounds[i], ("new_filling_an_attribute", [cand(slot_texts[i], "s5")]), ("restated", [cand(stored[i], "s2")]),
            ("update", [cand(stored[n + i].replace("统一使用Python 3.11", "改用Python 3.12"), "s3")]))]
        # an event on a date a stored one names (looked up by the date where the code does), another event
        months = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                  "November", "December")
        rounds += [("new_event_on_a_date", [cand(f"The user has a {a} and {b} garden visit on {months[d % 12]} "
                                                 f"{d % 28 + 1}", "s6", wing="episodic")])
                   for d, (a, b) in enumerate(next(fresh) for _ in range(n))]
        rounds += [("batch_of_5", [cand(new_text("sketch"), "s4", 1), cand(new_text("memo"), "s4", 3),
                                   cand(stored[(2 * n + i) % len(stored)], "s4", 5), cand(stored[i], "s4", 5),
                                   cand(stored[n + i].replace("统一使用Python 3.11", "改用Python 3.13"), "s4", 7)])
                   for i in range(n // 2)]
        if precompute:
            from automem.text import validate

            store.embed([validate(c.text)[0] for _, cands in rounds for c in cands])
        for kind, cands in rounds:
            timed(kind, cands)
        store.close()
    for kind, values in timings.items():
        out[kind] = {**figures(values), "cpu_p50_ms": round(percentile(cpu[kind], 50), 2),
                     "decisions": actions[kind]}
    return out


def bench_show(size: int, shows: int) -> dict:
    import numpy as np

    from automem.config import Config
    from automem.core import history
    from automem.core.memory import Memory, memory_id
    from automem.core.provenance import Evidence
    from automem.core.store import Store
    from automem.paths import Location

    rng = np.random.default_rng(11)
    dim = 16
    with temp_root(prefix="automem-bench-show-") as tmp:
        store = Store(Location.resolve(str(tmp)), Config())
        heads: list[str] = []
        plain: list[str] = []
        batch: list[Memory] = []
        now = 1_700_000_000

        def flush() -> None:
            if batch:
                vecs = rng.normal(size=(len(batch), dim)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                store.write_records(list(batch), vecs.tolist())
                batch.clear()

        with Stopwatch() as fill:
            i = 0
            while i < size:
                ev = Evidence(excerpt=f"第{i}轮：我们的服务{i}用的是版本{i % 7}，这是原话的一部分。", speaker="owner",
                              role="user", turn=1 + i % 9, origin="extraction", extractor="openai:glm-4-flash")
                if i % 5 == 0 and i + 3 <= size:  # a chain: v1 -> v2 -> v3, the last restated and pinned
                    chain = []
                    for v in range(3):
                        text = f"服务{i}统一使用版本{v + 1}.{i % 10}"
                        m = Memory(id=memory_id("default", "user", text), text=text, wing="user", profile="default",
                                   room="auto-extract", session_id=f"s{i}-{v}", created_at=now + i + v,
                                   updated_at=now + i + v)
                        ev.to_memory(m)
                        chain.append(m)
                    for old, new in zip(chain, chain[1:]):
                        history.supersede(old, new.id, f"{old.text[-3:]} -> {new.text[-3:]}", "update",
                                          new.created_at)
                    head = chain[-1]
                    head.restated = 5
                    history.record_restated(head, "s-later", ev, now + i + 5)
                    history.record_restated(head, "s-latest", ev, now + i + 6)
                    head.pinned, head.pinned_at = 1, now + i + 7
                    batch.extend(chain)
                    heads.append(head.id)
                    i += 3
                else:
                    text = f"用户的第{i}条偏好是早上喝{i % 13}杯茶"
                    m = Memory(id=memory_id("default", "user", text), text=text, wing="user", profile="default",
                               room="auto-extract", session_id=f"s{i}", created_at=now + i, updated_at=now + i)
                    ev.to_memory(m)
                    batch.append(m)
                    plain.append(m.id)
                    i += 1
                if len(batch) >= 999:
                    flush()
            flush()
        total = store.count()
        ids = ([heads[j] for j in rng.choice(len(heads), shows // 2)]
               + [plain[j] for j in rng.choice(len(plain), shows // 2)])
        history.show(store, ids[0])  # warm
        lat = []
        for mid in ids:
            with Stopwatch() as sw:
                shown = history.show(store, mid)
            lat.append(sw.ms)
            if shown.memory.id != mid:
                raise SystemExit(f"show({mid}) returned {shown.memory.id}")
        sample = history.show(store, heads[0]).to_json()
        store.close()
    return {"size": total, "fill_s": round(fill.s, 1), "shows": len(lat), "p50_ms": round(percentile(lat, 50), 2),
            "p95_ms": round(percentile(lat, 95), 2), "max_ms": round(max(lat), 2), "chain_heads": len(heads),
            "sample_replaced": len(sample.get("replaced") or [])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("write")
    w.add_argument("--size", type=int, default=10000)
    w.add_argument("--writes", type=int, default=40)
    w.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "automem-bench-provenance"))
    w.add_argument("--precompute", action="store_true",
                   help="embed every text before timing: time the write path and Chroma alone (the model's cost is "
                        "the same on every commit and most of the noise)")
    w.add_argument("--json", action="store_true")
    s = sub.add_parser("show")
    s.add_argument("--size", type=int, default=100000)
    s.add_argument("--shows", type=int, default=200)
    s.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    # The user's AUTOMEM_* settings would change what is measured; the commit is read before they go.
    measured_on = commit()
    for name in list(os.environ):
        if name.startswith("AUTOMEM_"):
            os.environ.pop(name)
    os.environ["AUTOMEM_COMMIT"] = measured_on
    if args.what == "write":
        out = bench_write(args.size, args.writes, Path(args.cache), args.precompute)
        if args.json:
            print_json(out, ensure_ascii=False)
            return 0
        print(header("bench_provenance write"))
        print(f"write cost at {out['size']} memories (evidence on candidates: {out['evidence']}, "
              f"embedding {out['embedding']}):")
        for kind in KINDS:
            f = out[kind]
            name = {"new_filling_an_attribute": "new, slot", "new_event_on_a_date": "new event"}.get(kind, kind)
            print(f"  {name:<11} p50 {f['p50_ms']:>7} ms  p90 {f['p90_ms']:>7} ms  CPU p50 {f['cpu_p50_ms']:>7} ms  "
                  f"({f['n']} writes; {f['decisions']})")
        return 0
    out = bench_show(args.size, args.shows)
    if args.json:
        print_json(out, ensure_ascii=False)
        return 0
    print(header("bench_provenance show"))
    print(f"show at {out['size']} memories (filled in {out['fill_s']} s): p50 {out['p50_ms']} ms, "
          f"p95 {out['p95_ms']} ms, max {out['max_ms']} ms over {out['shows']} ids (half chain heads of 3 values)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
