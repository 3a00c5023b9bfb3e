#!/usr/bin/env python3
"""Embedded store vs Chroma server, side by side: write-path adds, search latency, compact and migrate times.

    python scripts/bench_server.py [--url URL] [--sizes 1000,10000] [--adds 200] [--queries 200] [--json]

The same measurements as scripts/bench_store.py, run once per backend in one process. Without --url a Chroma server
is started on 127.0.0.1 (tests/support/chroma_server.py), so "server" here means loopback: add your network's
round trip per request (a write-path add makes 4 requests: search, get, get, add; a search makes 1).
Every server measurement uses a fresh database. Stores of each size are filled with `Store.import_memories`;
`compact` is timed on the filled store (it reads every record with its vector); `migrate` copies the filled
embedded store to a fresh server database.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "scripts"))

from bench_store import QUERIES, percentile  # noqa: E402
from stress_store import memory_text  # noqa: E402


def measure(backend: str, base: str, url: str, sizes: list[int], adds: int, queries: int) -> dict:
    from automem.compact import compact
    from automem.config import Config
    from automem.memory import Memory, memory_id
    from automem.paths import Location
    from automem.store import Store
    from automem.write_path import Candidate, remember
    from tests.support.chroma_server import create_database

    def fresh(name: str) -> Store:
        loc = Location(Path(base) / backend / name, "default")
        if backend == "server":
            return Store(loc, Config(chroma_url=url, chroma_database=create_database(url)))
        return Store(loc, Config())

    out: dict = {}
    store = fresh("adds")
    store.embed(["warm up the model"])
    store.count()
    lat = []
    for i in range(adds):
        t = time.perf_counter()
        remember(store, [Candidate(memory_text(1, i), wing="episodic")])
        lat.append((time.perf_counter() - t) * 1000)
    out["add_one_p50_ms"] = round(percentile(lat, 50), 1)
    out["add_one_p95_ms"] = round(percentile(lat, 95), 1)
    out["add_one_per_s"] = round(adds / (sum(lat) / 1000), 1)
    t = time.perf_counter()
    for start in range(0, adds, 50):
        remember(store, [Candidate(memory_text(2, i), wing="episodic") for i in range(start, min(adds, start + 50))])
    out["add_batched_per_s"] = round(adds / (time.perf_counter() - t), 1)
    store.close()

    rng = random.Random(7)
    for size in sizes:
        store = fresh(f"n{size}")
        mems = []
        for i in range(size):
            text = memory_text(i % 50, i)
            wing = ("user", "episodic", "instruction")[i % 3]
            prof = ("default", "blog-writer", "editor")[i % 3]
            mems.append(Memory(id=memory_id(prof, wing, text), text=text, wing=wing, profile=prof,
                               created_at=1_700_000_000 + i, updated_at=1_700_000_000 + i))
        t = time.perf_counter()
        store.import_memories(mems, batch=500)
        fill = time.perf_counter() - t
        store.search("warm up the index", k=5, profile="default")
        lat = []
        for q in range(queries):
            query = QUERIES[q % len(QUERIES)] + ("" if q < len(QUERIES) else f" {rng.randint(0, 999)}")
            t = time.perf_counter()
            store.search(query, k=5, profile="default")
            lat.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        report = compact(store, dry_run=True)
        compact_s = time.perf_counter() - t
        entry = {"search_p50_ms": round(percentile(lat, 50), 2), "search_p95_ms": round(percentile(lat, 95), 2),
                 "fill_per_s": round(size / fill, 1), "compact_dry_run_s": round(compact_s, 2),
                 "compact_would_merge": len(report.merges)}
        if backend == "embedded":
            from automem.migrate import migrate

            t = time.perf_counter()
            mig = migrate(store, url, database=f"bench-migrate-{size}-{os.getpid()}")
            entry["migrate_to_server_s"] = round(time.perf_counter() - t, 2)
            entry["migrate_ok"] = mig.ok
        store.close()
        out[f"n{size}"] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running Chroma server (default: start one on 127.0.0.1)")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--adds", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    from tests.support.chroma_server import ChromaServer

    base = tempfile.mkdtemp(prefix="automem-bench-server-")
    server = None if args.url else ChromaServer(os.path.join(base, "chroma-server")).start()
    url = args.url or server.url
    try:
        result = {"url": url, "cpus": os.cpu_count(),
                  "embedded": measure("embedded", base, url, sizes, args.adds, args.queries),
                  "server": measure("server", base, url, sizes, args.adds, args.queries)}
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(result))
        return 0
    e, s = result["embedded"], result["server"]
    rows = [("add, write path, one by one: p50 ms", "add_one_p50_ms"), ("  p95 ms", "add_one_p95_ms"),
            ("  adds/s", "add_one_per_s"), ("add, batches of 50: adds/s", "add_batched_per_s")]
    print(f"{'':44}{'embedded':>12}{'server':>12}   (server: {url}, {result['cpus']} cpus)")
    for label, key in rows:
        print(f"{label:44}{e[key]:>12}{s[key]:>12}")
    for size in sizes:
        es, ss = e[f"n{size}"], s[f"n{size}"]
        for label, key in (("search p50 ms", "search_p50_ms"), ("search p95 ms", "search_p95_ms"),
                           ("fill (import) memories/s", "fill_per_s"), ("compact --dry-run s", "compact_dry_run_s")):
            print(f"{f'{size:>6} memories: {label}':44}{es[key]:>12}{ss[key]:>12}")
        print(f"{f'{size:>6} memories: migrate embedded -> server s':44}{es['migrate_to_server_s']:>12}"
              f"{'':>12}  (verified: {es['migrate_ok']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
