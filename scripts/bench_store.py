#!/usr/bin/env python3
"""Store benchmark: prints add throughput, search latency at 1k and 10k memories, import time, and peak RSS.

    python -m scripts.bench_store [--sizes 1000,10000] [--adds 300] [--queries 200] [--json]

Add throughput goes through the whole write path (validate, embed, lock, neighbour lookup, decide, write), one by
one and in batches of 50. The 1k/10k stores are filled with `Store.import_memories` (same embedding and Chroma
writes, no dedup decision) to keep the run short; search latency is `Store.search` with the visibility filter.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys

from scripts.harness import REPO, Stopwatch, header, peak_rss_mb, percentile, print_json, temp_root, time_ms
from scripts.stress_store import memory_bank, memory_text  # the same generator of distinct sentences

QUERIES = ["which team owns the dashboard", "how often does the pipeline run", "where does the cache live",
           "what was the service renamed to", "how much memory does the cluster need", "用户用什么编辑器",
           "部署之前要做什么", "who gets the alerts", "how long is history kept", "what does the library depend on"]


def import_time(runs: int = 5) -> float:
    """Median wall time of `python -c "import automem"` in a fresh process."""
    return statistics.median(time_ms(subprocess.run, [sys.executable, "-c", "import automem"], check=True, cwd=REPO)
                             for _ in range(runs)) / 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--adds", type=int, default=300)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from automem.config import Config, load_config
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    out: dict = {"import_automem_s": round(import_time(), 3)}
    with temp_root(prefix="automem-bench-") as base:
        cfg = load_config(Location.resolve(base)) if os.environ.get("AUTOMEM_CHROMA_URL") else Config()

        # Write path throughput (store starts empty).
        store = Store(Location.resolve(base / "adds"), cfg)
        store.embed(["warm up the model"])
        with Stopwatch() as sw:
            single = [remember(store, [Candidate(memory_text(1, i), wing="episodic")])[0] for i in range(args.adds)]
        one_by_one = args.adds / sw.s
        batched = []
        with Stopwatch() as sw:
            for start in range(0, args.adds, 50):
                batched += remember(store, [Candidate(memory_text(2, i), wing="episodic")
                                            for i in range(start, start + 50)])
        batch_rate = args.adds / sw.s
        store.close()
        out["add_one_by_one_per_s"] = round(one_by_one, 1)
        out["add_batched_per_s"] = round(batch_rate, 1)
        out["add_decisions"] = {a: sum(d.action == a for d in single + batched) for a in ("new", "update", "duplicate")}

        rng = random.Random(7)
        for size in [int(s) for s in args.sizes.split(",") if s]:
            store = Store(Location.resolve(base / f"n{size}"), cfg)
            mems = memory_bank(size)
            fill_s = time_ms(store.import_memories, mems, batch=500) / 1000
            store.search("warm up the index", k=5, profile="default")
            lat = []
            for q in range(args.queries):
                query = QUERIES[q % len(QUERIES)] + ("" if q < len(QUERIES) else f" {rng.randint(0, 999)}")
                lat.append(time_ms(store.search, query, k=5, profile="default"))
            store.close()
            out[f"search_{size}"] = {"p50_ms": round(percentile(lat, 50), 2), "p95_ms": round(percentile(lat, 95), 2),
                                     "fill_per_s": round(size / fill_s, 1)}
    out["peak_rss_mb"] = peak_rss_mb()
    out["backend"] = "server" if cfg.chroma_url else "embedded"

    if args.json:
        print_json(out)
        return 0
    print(header("bench_store"))
    print(f"backend: {out['backend']}")
    print(f"python -c 'import automem': {out['import_automem_s'] * 1000:.0f} ms (median of 5)")
    print(f"add through the write path: {out['add_one_by_one_per_s']}/s one by one, "
          f"{out['add_batched_per_s']}/s in batches of 50   decisions: {out['add_decisions']}")
    for size in args.sizes.split(","):
        s = out.get(f"search_{size}")
        if s:
            print(f"search at {int(size):>6} memories: p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms "
                  f"(filled at {s['fill_per_s']}/s)")
    print(f"peak RSS: {out['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
