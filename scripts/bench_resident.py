"""Figures of the resident recall process (automem.core.resident), in a temp root (never ~/.hermes).

    .venv/bin/python -m scripts.bench_resident [--memories 100] [--asks 50] [--runs 7]

- the `ask` round trip (recall op, as HermesSession.prefetch sends it): p50 / p95 over --asks asks;
- the resident's RSS, start-up CPU time (what it logs as `resident_started`) and CPU while idle;
- a fresh process's first prefetch (`HermesSession.start` + `prefetch`, wall and the process's CPU), with a
  resident answering vs without one (the lexical fallback), alternating, --runs each; and whether chromadb was
  imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import (
    Stopwatch,
    child_env,
    cpu_seconds,
    peak_rss_mb,
    percentile,
    print_json,
    rss_mb,
    stop_residents,
    temp_root,
)

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from automem.hermes.session import HermesSession
sess = HermesSession.start(sys.argv[1], session_id="bench")
t1 = time.perf_counter(); c1 = time.process_time()
text = sess.prefetch(sys.argv[2])
t2 = time.perf_counter(); c2 = time.process_time()
print(json.dumps({"start_ms": (t1 - t0) * 1000, "prefetch_ms": (t2 - t1) * 1000, "prefetch_cpu_ms": (c2 - c1) * 1000,
                  "total_cpu_ms": (c2 - c0) * 1000, "found": "Mochi" in text, "chromadb": "chromadb" in sys.modules}))
"""

QUERY = "What's my cat called?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=100)
    ap.add_argument("--asks", type=int, default=50)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with temp_root(prefix="automem-bench-resident-") as tmp:
        return measure(tmp, args)


def measure(tmp: Path, args: argparse.Namespace) -> int:
    root = tmp / "root"
    root.mkdir()
    env = child_env(root, home=tmp / "home")
    os.environ.update(HOME=env["HOME"], HERMES_HOME=str(root))
    for k in [k for k in os.environ if k.startswith("AUTOMEM_")]:
        del os.environ[k]
    from automem.core import resident_client
    from automem.core.memory import Memory, memory_id
    from automem.core.store import open_store
    from automem.paths import Location

    loc = Location(root, "default")
    texts = ["用户养了一只叫Mochi的猫"] + [f"The user noted fact number {i}: item {i * 7} goes to shelf {i % 13}"
                                     for i in range(args.memories - 1)]
    now = int(time.time())
    store = open_store(loc)
    store.import_memories([Memory(id=memory_id("default", "user", t), text=t, wing="user", profile="default",
                                  created_at=now, updated_at=now) for t in texts])
    store.close()

    proc = subprocess.Popen([sys.executable, "-m", "automem.core.resident", "--hermes-home", str(root)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        with Stopwatch() as ready:
            while resident_client.ask(loc, {"op": "ping"}, timeout=1.0) is None:
                if proc.poll() is not None or time.perf_counter() - ready.start > 120:
                    raise SystemExit("the resident did not start")
                time.sleep(0.05)
        req = {"op": "recall", "query": QUERY, "profile": "default", "scopes": [""], "k": 15,
               "where": {"room": {"$ne": "kanban"}}}
        times, misses = [], 0
        for i in range(args.asks):
            req["query"] = f"{QUERY} ({i})" if i % 2 else QUERY
            with Stopwatch() as sw:
                reply = resident_client.ask(loc, req, timeout=5.0)
            times.append(sw.ms)
            misses += reply is None or not reply.get("ok")
        within = sum(t <= resident_client.ASK_TIMEOUT_S * 1000 for t in times)
        rss, hwm = rss_mb(proc.pid), peak_rss_mb(proc.pid)
        before = cpu_seconds(proc.pid)
        time.sleep(10)
        idle_cpu_ms_per_min = (cpu_seconds(proc.pid) - before) * 1000 * 6
        log = [json.loads(line) for line in loc.log_file.read_text().splitlines()]
        cpu = next(r["startup_cpu_s"] for r in log if r["event"] == "resident_started")

        rows = {"with": [], "without": []}
        for i in range(args.runs * 2):
            mode = "with" if i % 2 == 0 else "without"
            e = dict(env)
            if mode == "without":
                e["AUTOMEM_RESIDENT"] = "false"
            with Stopwatch() as wall:
                out = subprocess.run([sys.executable, "-c", CHILD, str(root), QUERY], env=e, capture_output=True,
                                     text=True, timeout=120)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["process_wall_ms"] = wall.ms
            rows[mode].append(row)
        med = {m: {k: round(statistics.median(r[k] for r in rs), 1) for k in
                   ("start_ms", "prefetch_ms", "prefetch_cpu_ms", "total_cpu_ms", "process_wall_ms")}
               for m, rs in rows.items()}
        for m, rs in rows.items():
            med[m]["found"] = f"{sum(r['found'] for r in rs)}/{len(rs)}"
            med[m]["chromadb_imported"] = any(r["chromadb"] for r in rs)
        print_json({
            "memories": args.memories, "load_average": os.getloadavg(),
            "ask_ms": {"p50": round(percentile(times, 50), 1), "p95": round(percentile(times, 95), 1),
                       "max": round(max(times), 1), "within_timeout": f"{within}/{len(times)}", "failed": misses},
            "resident": {"ready_s": round(ready.s, 2), "startup_cpu_s": cpu, "rss_mb": rss, "peak_rss_mb": hwm,
                         "idle_cpu_ms_per_min": round(idle_cpu_ms_per_min, 1)},
            "fresh_process_median": med}, indent=1)
    finally:
        stop_residents(root)  # the one started here, and any a fresh process started
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
