#!/usr/bin/env python3
"""Forget and redaction benchmark: prints what forgetting costs and what the secret checks add.

    python -m scripts.bench_forget [--sizes 1000,10000] [--forgets 5] [--writes 30] [--json]

- `forget` of one memory in an embedded store of each size (delete, tombstone, Chroma log purge + VACUUM,
  snapshot rewrite, log and spool scrub), with the size of chroma.sqlite3;
- one write through the write path from an automatic source with no tombstone collection, and with 100
  tombstones (the `forgotten_among` look-up);
- `redact_secrets` on everyday messages of 500 characters (what `enqueue` runs per kept message).

The stores are filled with `Store.write_records` and the offline embedding (the write path's decision is not measured
here).
"""

from __future__ import annotations

import argparse
import os
import sys

from scripts.harness import Stopwatch, header, percentile, print_json, temp_root, time_ms
from scripts.stress_store import memory_bank, memory_text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--forgets", type=int, default=5)
    ap.add_argument("--writes", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from automem.config import Config
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location
    from automem.text import redact_secrets

    out: dict = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    for size in [int(s) for s in args.sizes.split(",") if s]:
        with temp_root() as tmp:
            store = Store(Location(tmp, "default"), Config())
            mems = memory_bank(size)
            for start in range(0, size, 500):
                chunk = mems[start:start + 500]
                store.write_records(chunk, store.embed([m.text for m in chunk]))
            db = tmp / "automem" / "chroma" / "chroma.sqlite3"
            times = [time_ms(store.forget, [m.id]) for m in mems[:args.forgets]]
            out[f"forget_ms_{size}"] = {"p50": round(percentile(times, 50), 1), "max": round(max(times), 1),
                                        "chroma_sqlite3_mb": round(db.stat().st_size / 1e6, 1)}
            store.close()

    with temp_root() as tmp:
        store = Store(Location(tmp, "default"), Config())
        mems = memory_bank(1000)
        store.write_records(mems, store.embed([m.text for m in mems]))

        def writes(offset: int) -> list[float]:
            return [time_ms(remember, store, [Candidate(memory_text(7, offset + i), wing="episodic",
                                                        room="auto-extract")])
                    for i in range(args.writes)]

        writes(30_000)  # warm: the model, the client, the page cache
        before = writes(10_000)
        store.forget([m.id for m in mems[:100]])
        writes(40_000)
        after = writes(20_000)
        out["auto_write_ms_1000"] = {"no_tombstones_p50": round(percentile(before, 50), 1),
                                     "100_tombstones_p50": round(percentile(after, 50), 1)}
        store.close()

    sample = ("我习惯用vim编辑器，不要给我推荐nano。项目统一用Python 3.11，代码风格遵循PEP8。 "
              "Deploy with make release after the tests pass on port 8080, tag v2.3.1. ") * 6
    sample = sample[:500]
    n = 2000
    with Stopwatch() as sw:
        for _ in range(n):
            redact_secrets(sample)
    out["redact_us_per_500_chars"] = round(sw.s / n * 1e6, 1)

    if args.json:
        print_json(out)
    else:
        print(header("bench_forget"))
        print(f"load average: {out['load_average']}")
        for key, value in out.items():
            if key != "load_average":
                print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
