#!/usr/bin/env python3
"""The Memory tab's figures (printed, never asserted): list and search latency through its backend in a real
`hermes dashboard`, at 10,000 and 100,000 memories, and the size of the page's bundle.

For each size N, a fresh temporary Hermes root is filled with N synthetic memories (`scripts.bench_scale`'s
generator: English, Chinese and mixed, three profiles, 5..200 characters) through `Store.import_memories` in a
child process; a fifth of the default profile's persona and instruction memories are pinned there. Then
`automem install --no-pip` puts the tab in, `hermes dashboard --skip-build --port 0` starts (its own process
group, stopped by its id), and every request goes over HTTP with the session token, as the page sends them:

* list: GET /memories: the first page of the default profile (owner), pages deep in the list (offset up to
  N/2), and the filters (category, pinned, every scope, another profile), 60 requests after one warm-up;
* search: GET /search?q=... for 20 questions in English and Chinese (the agent's hybrid recall, k=10: the page's
  default), after one warm-up that loads the embedding model;
* detail, overview and health, a few each, for the record.

Targets (issue 31): list p95 <= 300 ms, search p95 <= 200 ms. Wall times on a shared machine move with whatever
else runs; the figures are one run's.

    python -m scripts.bench_dashboard [--sizes 10000,100000] [--keep .bench/dashboard] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

from scripts.bench_scale import QUESTIONS, synthetic
from scripts.harness import (
    REPO,
    Stopwatch,
    commit,
    cpu_seconds,
    measured_at,
    percentile,
    print_json,
    python_m,
    temp_root,
)

API = "/api/plugins/automem"
BUNDLE = REPO / "hooks" / "automem" / "dashboard" / "dist"


def child_fill(root: str, n: int) -> None:
    """Import n synthetic memories into the root (in this child process), pinning some."""
    from automem.config import Config
    from automem.core.store import open_store
    from automem.paths import Location

    mems = synthetic(n)
    rnd = random.Random(7)
    for m in mems:
        if m.profile == "default" and m.wing in ("user", "instruction") and rnd.random() < 0.2:
            m.pinned = 1
    store = open_store(Location.resolve(hermes_home=root), Config())
    with Stopwatch() as sw:
        store.import_memories(mems)
    print(json.dumps({"count": store.count(), "import_s": round(sw.s, 1)}))
    store.close()


def timed(dash, path: str, params: dict | None = None) -> float:
    url = path + ("?" + urlencode(params) if params else "")
    with Stopwatch() as sw:
        status, body = dash.get(url)
    if status != 200:
        raise SystemExit(f"GET {url}: HTTP {status}: {body}")
    return sw.ms


def filled_root(base: Path, n: int, keep: Path | None):
    """A Hermes root holding the n synthetic memories: made under `base`, or reused from `keep` (filling 100,000
    costs minutes of both cores: --keep spares a second run that)."""
    import shutil

    from tests.support.hermes import HermesRoot

    root = HermesRoot.create(base, "http://127.0.0.1:9/v1", extra_config="automem:\n  extract_backend: rules\n")
    for profile in ("work", "family"):  # bench_scale's other profiles, as folders the dashboard knows
        (root.root / "profiles" / profile).mkdir(parents=True)
    saved = keep / f"automem-{n}" if keep else None
    if saved is not None and (saved / "fill.json").is_file():
        shutil.copytree(saved, root.root / "automem", dirs_exist_ok=True)
        return root, {**json.loads((saved / "fill.json").read_text()), "reused": str(saved)}
    with Stopwatch() as sw:
        res = subprocess.run(python_m("scripts.bench_dashboard", "--child", str(root.root), str(n)),
                             capture_output=True, text=True, env=root.env(), cwd=REPO)
    if res.returncode != 0:
        raise SystemExit(f"filling {n} memories failed:\n{res.stderr[-3000:]}")
    fill = json.loads(res.stdout.strip().splitlines()[-1])
    fill["fill_s"] = round(sw.s, 1)
    if saved is not None:
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(root.root / "automem", saved, ignore=shutil.ignore_patterns("logs", "*.lock"))
        (saved / "fill.json").write_text(json.dumps(fill))
    return root, fill


def cpu_ms(pid: int, work) -> tuple[list[float], float]:
    """(wall ms of each call, CPU ms the dashboard process spent per call): on a shared machine the CPU figure
    moves much less with the others' load than wall time does."""
    before = cpu_seconds(pid)
    walls = work()
    return walls, (cpu_seconds(pid) - before) * 1000 / max(1, len(walls))


def measure(n: int, keep: Path | None) -> dict:
    from tests.support.dashboard import Dashboard

    with temp_root(prefix="bench-dashboard-") as tmp:
        root, fill = filled_root(tmp, n, keep)
        root.automem("install", "--no-pip").check()
        out: dict = {"n": n, "fill": fill}
        with Dashboard(root) as dash:
            rnd = random.Random(11)
            first = timed(dash, f"{API}/memories", {"limit": 50})
            total = dash.get(f"{API}/memories?limit=1")[1]["total"]
            pid = dash.proc.pid
            filters = [{"category": "persona"}, {"category": "instruction"}, {"pinned": "true"}, {"scope": "all"},
                       {"profile": "work"}, {"status": "active", "category": "episodic", "scope": "all"}]
            offsets = [rnd.randrange(0, max(1, min(total, n // 2))) for _ in range(20)]
            kinds: dict[str, list[float]] = {}
            list_cpu: dict[str, float] = {}
            kinds["first page"], list_cpu["first page"] = cpu_ms(pid, lambda: [
                timed(dash, f"{API}/memories", {"limit": 50}) for _ in range(20)])
            kinds["deep page"], list_cpu["deep page"] = cpu_ms(pid, lambda: [
                timed(dash, f"{API}/memories", {"limit": 50, "offset": o}) for o in offsets])
            kinds["filtered"], list_cpu["filtered"] = cpu_ms(pid, lambda: [
                timed(dash, f"{API}/memories", {"limit": 50, **filters[i % len(filters)]}) for i in range(20)])
            warm_search = timed(dash, f"{API}/search", {"q": "warm-up", "k": 10})
            search, search_cpu = cpu_ms(pid, lambda: [timed(dash, f"{API}/search", {"q": q, "k": 10})
                                                      for q in QUESTIONS])
            ids = [m["id"] for m in dash.get(f"{API}/memories?limit=10")[1]["items"]]
            detail = [timed(dash, f"{API}/memories/{i}") for i in ids]
            overview = [timed(dash, f"{API}/overview") for _ in range(5)]
            health = [timed(dash, f"{API}/health") for _ in range(5)]
        every = [v for vs in kinds.values() for v in vs]
        out["load_average"] = [round(x, 1) for x in os.getloadavg()]  # the machine is shared: how busy it was
        out.update({
            "active_default_owner": total, "first_list_ms": round(first, 1), "first_search_ms": round(warm_search, 1),
            "list_ms": {k: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1),
                            "cpu_ms": round(list_cpu[k], 1)} for k, v in kinds.items()},
            "list_all": {"p50": round(percentile(every, 50), 1), "p95": round(percentile(every, 95), 1),
                         "n": len(every)},
            "search": {"p50": round(percentile(search, 50), 1), "p95": round(percentile(search, 95), 1),
                       "n": len(search), "cpu_ms": round(search_cpu, 1)},
            "detail": {"median": round(statistics.median(detail), 1)},
            "overview": {"median": round(statistics.median(overview), 1)},
            "health": {"median": round(statistics.median(health), 1)},
        })
        return out


def bundle() -> dict:
    files = {p.name: p.read_bytes() for p in sorted(BUNDLE.iterdir()) if p.is_file()}
    return {name: {"bytes": len(b), "gzip": len(gzip.compress(b, 9))} for name, b in files.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="keep the filled stores in DIR and reuse them on the next run "
                                                   "(e.g. .bench/dashboard; 100,000 memories take minutes to fill)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_fill(args.child[0], int(args.child[1]))
        return 0
    results = {"commit": commit(), "bundle": bundle(), "sizes": []}
    for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
        r = measure(n, Path(args.keep) if args.keep else None)
        results["sizes"].append(r)
        if not args.json:
            print(f"{n:>7} memories (filled in {r['fill'].get('fill_s')} s): list p50/p95 {r['list_all']['p50']}/"
                  f"{r['list_all']['p95']} ms, search p50/p95 {r['search']['p50']}/{r['search']['p95']} ms",
                  file=sys.stderr)
    if args.json:
        print_json(results, ensure_ascii=False)
        return 0
    print(f"Memory tab figures, commit {results['commit']}, {measured_at()}")
    for name, b in results["bundle"].items():
        print(f"  bundle {name}: {b['bytes']:,} bytes ({b['gzip']:,} gzipped)")
    cols = results["sizes"]
    rows = [("memories", lambda r: f"{r['n']:,}"),
            ("list p50 / p95 (ms), all 60", lambda r: f"{r['list_all']['p50']} / {r['list_all']['p95']}")]
    for kind in ("first page", "deep page", "filtered"):
        rows.append((f"  {kind}: p50 / p95 (ms), dashboard CPU per request (ms)",
                     lambda r, k=kind: f"{r['list_ms'][k]['p50']} / {r['list_ms'][k]['p95']}, "
                                       f"{r['list_ms'][k]['cpu_ms']}"))
    rows += [("search p50 / p95 (ms), 20 questions", lambda r: f"{r['search']['p50']} / {r['search']['p95']}"),
             ("search: dashboard CPU per request (ms)", lambda r: f"{r['search']['cpu_ms']}"),
             ("first list after start (ms)", lambda r: f"{r['first_list_ms']}"),
             ("first search (model load, ms)", lambda r: f"{r['first_search_ms']}"),
             ("detail median (ms)", lambda r: f"{r['detail']['median']}"),
             ("overview median (ms)", lambda r: f"{r['overview']['median']}"),
             ("health median (ms)", lambda r: f"{r['health']['median']}"),
             ("load average after (1/5/15 min, 2 cores)", lambda r: " ".join(map(str, r["load_average"])))]
    print("| figure | " + " | ".join(f"{r['n']:,}" for r in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for label, fn in rows[1:]:
        print(f"| {label} | " + " | ".join(fn(r) for r in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
