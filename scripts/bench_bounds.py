#!/usr/bin/env python3
"""What hostile or careless input costs: prints figures (time, peak memory), asserts nothing.

    python -m scripts.bench_bounds [--json] [--skip-prefetch] [--skip-import] [--skip-yaml]

- prefetch of a pasted 1 MB message, in a fresh process per path: the start path (the recall index's keyword half,
  no store: what a fresh `hermes chat` runs) and a warm store (`Store.recall`, the model loaded: a long-lived
  session, the resident); wall time of the call and the process's peak RSS;
- `automem import` of one malicious line each (the command as a user runs it: a fresh process, Python's start
  included): wall time, exit code, the one-line message;
- `load_config` of a config.yaml holding a YAML alias bomb (nine levels of nine: 387 million values once expanded).

Every run gets a temporary Hermes root with a few memories; nothing outside it is touched.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from scripts.harness import Stopwatch, child_env, header, print_json, temp_root

SEED = ["The user's build server is called zephyr", "The user drinks green tea every morning",
        "项目统一使用Python 3.11", "The user's sister Anna lives in Lisbon"]
GOOD = {"id": "m_" + "a" * 24, "text": "The user likes green tea", "wing": "user", "status": "active",
        "profile": "default", "created_at": 1700000000, "updated_at": 1700000000}
MALICIOUS = {
    "created_at 1e19": {"created_at": 1e19},
    "updated_at NaN": {"updated_at": math.nan},
    "updated_at Infinity": {"updated_at": math.inf},
    "created_at 10**30": {"created_at": 10 ** 30},
    "restated 10**12": {"restated": 10 ** 12},
    "a 60 KB session_id": {"session_id": "s" * 60_000},
    "200 unknown keys": {f"k{i}": i for i in range(200)},
    "a 1 MB text": {"text": "tea " * 250_000},
    "a 100 MB line": {"text": "tea " * 25_000_000},
}


def probe_env(root: Path) -> dict:
    """A probe's environment: the root, no resident recall process, this checkout on PYTHONPATH."""
    return child_env(root, clean=False, AUTOMEM_RESIDENT="false")


def make_root(root: Path) -> Path:
    """A few memories in `root` (made), through the write path, with the recall index built."""
    root.mkdir(parents=True, exist_ok=True)
    code = textwrap.dedent(f"""
        from automem.core.store import open_store
        from automem.core.write_path import Candidate, remember
        store = open_store()
        remember(store, [Candidate(t, wing="user") for t in {SEED!r}])
        store.ensure_index()
        store.close()
    """)
    subprocess.run([sys.executable, "-c", code], env=probe_env(root), check=True, timeout=600)
    return root


# The probes measure their own peak (VmHWM: this process's own peak; ru_maxrss would carry a forking parent's over
# exec) with scripts/probe.py, which imports nothing that would add to it.
PREFETCH = textwrap.dedent("""
    import json, sys, time
    from scripts.probe import peak_rss_mb as peak_mb
    from automem.config import load_config
    from automem.core.recall import prefetch_block
    from automem.paths import Location
    loc = Location.resolve()
    config = load_config(loc)
    store = None
    if sys.argv[1] == "warm":
        from automem.core.store import open_store
        store = open_store(loc, config)
        store.recall("warm up", k=1)
    query = "ERROR connection reset by peer at 0x7ff3 in worker pool\\n" * 19000 + "which build server was that?"
    before = peak_mb()
    t = time.perf_counter()
    text, ids = prefetch_block(loc, config, query, store=store)
    ms = (time.perf_counter() - t) * 1000
    print(json.dumps({"path": sys.argv[1], "query_bytes": len(query.encode()), "ms": round(ms, 1),
                      "peak_rss_mb": peak_mb(), "rss_before_call_mb": before,
                      "found": len(ids)}))
""")


def bench_prefetch(root: Path) -> list[dict]:
    out = []
    for path in ("start", "warm"):
        proc = subprocess.run([sys.executable, "-c", PREFETCH, path], env=probe_env(root), capture_output=True,
                              text=True, timeout=900)
        if proc.returncode != 0:
            out.append({"path": path, "error": proc.stderr.strip().splitlines()[-1:]})
        else:
            out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def bench_import(root: Path, folder: Path) -> list[dict]:
    out = []
    for name, change in MALICIOUS.items():
        path = folder / "line.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({**GOOD, **change}) + "\n")
        with Stopwatch() as sw:
            proc = subprocess.run([sys.executable, "-m", "automem", "import", str(path)], env=probe_env(root),
                                  capture_output=True, text=True, timeout=900)
        out.append({"line": name, "bytes": os.path.getsize(path), "exit": proc.returncode, "ms": round(sw.ms, 1),
                    "message": (proc.stderr.strip().splitlines() or [""])[-1][:160]})
    with Stopwatch() as sw:
        proc = subprocess.run([sys.executable, "-c", "import automem.cli"], env=probe_env(root), timeout=120)
    out.append({"line": "(python start + import automem.cli, for reference)", "ms": round(sw.ms, 1),
                "exit": proc.returncode})
    return out


YAML = textwrap.dedent("""
    import json, time
    from scripts.probe import peak_rss_mb as peak_mb
    from automem.config import load_config
    from automem.errors import ConfigError
    from automem.paths import Location
    t = time.perf_counter()
    try:
        load_config(Location.resolve())
        message = "loaded"
    except ConfigError as exc:
        message = str(exc)
    print(json.dumps({"ms": round((time.perf_counter() - t) * 1000, 1), "message": message[-120:],
                      "peak_rss_mb": peak_mb()}))
""")


def bench_yaml(root: Path) -> dict:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    lines.append(f"automem:\n  owner_ids: *{prev}")
    with open(root / "config.yaml", "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-c", YAML], env=probe_env(root), capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip-prefetch", action="store_true")
    ap.add_argument("--skip-import", action="store_true")
    ap.add_argument("--skip-yaml", action="store_true")
    args = ap.parse_args(argv)
    result: dict = {}
    with temp_root(prefix="automem-bench-bounds-") as tmp:
        root = make_root(tmp / "root")
        if not args.skip_prefetch:
            result["prefetch_1mb"] = bench_prefetch(root)
        if not args.skip_import:
            (tmp / "lines").mkdir()
            result["import_malicious"] = bench_import(root, tmp / "lines")
        if not args.skip_yaml:
            (tmp / "yaml").mkdir()
            result["yaml_alias_bomb"] = bench_yaml(tmp / "yaml")
    if args.json:
        print_json(result, ensure_ascii=False)
        return 0
    print(header("bench_bounds"))
    for r in result.get("prefetch_1mb", []):
        print(f"prefetch of a {r.get('query_bytes', 0) / 1e6:.2f} MB message, {r['path']} path: "
              + (f"{r['ms']} ms, peak RSS {r['peak_rss_mb']} MB (peak before the call {r['rss_before_call_mb']} MB), "
                 f"{r['found']} memories shown" if "ms" in r else f"error {r['error']}"))
    for r in result.get("import_malicious", []):
        print(f"import {r['line']}: exit {r['exit']} in {r['ms']} ms  {r.get('message', '')}")
    y = result.get("yaml_alias_bomb")
    if y:
        print("config.yaml alias bomb: " + (f"{y['ms']} ms, peak RSS {y['peak_rss_mb']} MB: {y['message']}"
                                              if "ms" in y else f"error {y['error']}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
