#!/usr/bin/env python3
"""Embedded store vs Chroma server, side by side: write-path adds, search latency, compact and migrate times.

Both backends are measured in one run, interleaved add by add and query by query.

    python -m scripts.bench_server [--url URL] [--sizes 1000,10000] [--adds 200] [--queries 200] [--json]

The same measurements as `python -m scripts.bench_store`, run once per backend in one process. Without --url a
Chroma server is started on 127.0.0.1 (tests/support/chroma_server.py), so "server" here means loopback: add your
network's round trip per request (a write-path add makes 4 requests: search, get, get, add; a search makes 1).
Every server measurement uses a fresh database. Stores of each size are filled with `Store.import_memories`;
`compact` is timed on the filled store (it reads every record with its vector); `migrate` copies the filled
embedded store to a fresh server database.
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

from scripts.bench_store import QUERIES
from scripts.harness import Stopwatch, header, percentile, print_json, temp_root, time_ms
from scripts.stress_store import memory_bank, memory_text


def measure(base: str, url: str, sizes: list[int], adds: int, queries: int) -> dict:
    """Every figure for both backends, interleaved step by step (add by add, query by query), so that a machine
    whose load changes during the run weighs on both alike."""
    from automem.config import Config
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.ops.compact import compact
    from automem.ops.migrate import migrate
    from automem.paths import Location
    from tests.support.chroma_server import create_database

    backends = ("embedded", "server")

    def fresh(backend: str, name: str) -> Store:
        loc = Location(Path(base) / backend / name, "default")
        if backend == "server":
            return Store(loc, Config(chroma_url=url, chroma_database=create_database(url)))
        return Store(loc, Config())

    out: dict = {b: {} for b in backends}
    stores = {b: fresh(b, "adds") for b in backends}
    for st in stores.values():
        st.embed(["warm up the model"])
        st.count()
    lat: dict = {b: [] for b in backends}
    for i in range(adds):
        for b in backends:
            lat[b].append(time_ms(remember, stores[b], [Candidate(memory_text(1, i), wing="episodic")]))
    batch_s = {b: 0.0 for b in backends}
    for start in range(0, adds, 50):
        for b in backends:
            with Stopwatch() as sw:
                batch = [Candidate(memory_text(2, i), wing="episodic") for i in range(start, min(adds, start + 50))]
                remember(stores[b], batch)
            batch_s[b] += sw.s
    for b in backends:
        out[b].update(add_one_p50_ms=round(percentile(lat[b], 50), 1),
                      add_one_p95_ms=round(percentile(lat[b], 95), 1),
                      add_one_per_s=round(adds / (sum(lat[b]) / 1000), 1),
                      add_batched_per_s=round(adds / batch_s[b], 1))
        stores[b].close()

    rng = random.Random(7)
    for size in sizes:
        mems = memory_bank(size)
        stores = {b: fresh(b, f"n{size}") for b in backends}
        entry: dict = {b: {} for b in backends}
        for b in backends:
            entry[b]["fill_per_s"] = round(size / (time_ms(stores[b].import_memories, mems, batch=500) / 1000), 1)
            stores[b].search("warm up the index", k=5, profile="default")
        lat = {b: [] for b in backends}
        for q in range(queries):
            query = QUERIES[q % len(QUERIES)] + ("" if q < len(QUERIES) else f" {rng.randint(0, 999)}")
            for b in backends:
                lat[b].append(time_ms(stores[b].search, query, k=5, profile="default"))
        for b in backends:
            with Stopwatch() as sw:
                report = compact(stores[b], dry_run=True)
            entry[b].update(search_p50_ms=round(percentile(lat[b], 50), 2),
                            search_p95_ms=round(percentile(lat[b], 95), 2),
                            compact_dry_run_s=round(sw.s, 2), compact_would_merge=len(report.merges))
        with Stopwatch() as sw:
            mig = migrate(stores["embedded"], url, database=f"bench-migrate-{size}-{os.getpid()}")
        entry["embedded"].update(migrate_to_server_s=round(sw.s, 2), migrate_ok=mig.ok)
        for b in backends:
            stores[b].close()
            out[b][f"n{size}"] = entry[b]
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

    with temp_root(prefix="automem-bench-server-") as base:
        server = None if args.url else ChromaServer(str(base / "chroma-server")).start()
        url = args.url or server.url
        try:
            # The load average says how busy the machine was: both backends share it, so compare them side by side.
            result = {"url": url, "cpus": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2)}
            result.update(measure(str(base), url, sizes, args.adds, args.queries))
            result["load_after"] = round(os.getloadavg()[0], 2)
        finally:
            if server is not None:
                server.stop()
    if args.json:
        print_json(result)
        return 0
    print(header("bench_server"))
    e, s = result["embedded"], result["server"]
    rows = [("add, write path, one by one: p50 ms", "add_one_p50_ms"), ("  p95 ms", "add_one_p95_ms"),
            ("  adds/s", "add_one_per_s"), ("add, batches of 50: adds/s", "add_batched_per_s")]
    print(f"{'':44}{'embedded':>12}{'server':>12}   (server: {url}, {result['cpus']} cpus, load average "
          f"{result['load_before']} before, {result['load_after']} after)")
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
