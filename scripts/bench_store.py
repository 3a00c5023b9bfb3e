#!/usr/bin/env python3
"""Store benchmark: prints add throughput, search latency at 1k and 10k memories, import time, and peak RSS.

    python scripts/bench_store.py [--sizes 1000,10000] [--adds 300] [--queries 200] [--json]

Add throughput goes through the whole write path (validate, embed, lock, neighbour lookup, decide, write), one by
one and in batches of 50. The 1k/10k stores are filled with `Store.import_memories` (same embedding and Chroma
writes, no dedup decision) to keep the run short; search latency is `Store.search` with the visibility filter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from stress_store import memory_bank, memory_text  # noqa: E402  (same generator of distinct sentences)

QUERIES = ["which team owns the dashboard", "how often does the pipeline run", "where does the cache live",
           "what was the service renamed to", "how much memory does the cluster need", "用户用什么编辑器",
           "部署之前要做什么", "who gets the alerts", "how long is history kept", "what does the library depend on"]


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def import_time(runs: int = 5) -> float:
    """Median wall time of `python -c "import automem"` in a fresh process."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import automem"], check=True, cwd=REPO)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


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
    base = tempfile.mkdtemp(prefix="automem-bench-")
    cfg = load_config(Location.resolve(base)) if os.environ.get("AUTOMEM_CHROMA_URL") else Config()

    # Write path throughput (store starts empty).
    loc = Location.resolve(os.path.join(base, "adds"))
    store = Store(loc, cfg)
    store.embed(["warm up the model"])
    t = time.perf_counter()
    single = [remember(store, [Candidate(memory_text(1, i), wing="episodic")])[0] for i in range(args.adds)]
    one_by_one = args.adds / (time.perf_counter() - t)
    t = time.perf_counter()
    batched = []
    for start in range(0, args.adds, 50):
        batched += remember(store, [Candidate(memory_text(2, i), wing="episodic") for i in range(start, start + 50)])
    batch_rate = args.adds / (time.perf_counter() - t)
    store.close()
    out["add_one_by_one_per_s"] = round(one_by_one, 1)
    out["add_batched_per_s"] = round(batch_rate, 1)
    out["add_decisions"] = {a: sum(d.action == a for d in single + batched) for a in ("new", "update", "duplicate")}

    rng = random.Random(7)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        loc = Location.resolve(os.path.join(base, f"n{size}"))
        store = Store(loc, cfg)
        mems = memory_bank(size)
        t = time.perf_counter()
        store.import_memories(mems, batch=500)
        fill = time.perf_counter() - t
        store.search("warm up the index", k=5, profile="default")
        lat = []
        for q in range(args.queries):
            query = QUERIES[q % len(QUERIES)] + ("" if q < len(QUERIES) else f" {rng.randint(0, 999)}")
            t = time.perf_counter()
            store.search(query, k=5, profile="default")
            lat.append((time.perf_counter() - t) * 1000)
        store.close()
        out[f"search_{size}"] = {"p50_ms": round(percentile(lat, 50), 2), "p95_ms": round(percentile(lat, 95), 2),
                                 "fill_per_s": round(size / fill, 1)}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["backend"] = "server" if cfg.chroma_url else "embedded"

    if args.json:
        print(json.dumps(out))
        return 0
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
