#!/usr/bin/env python3
"""Server mode with several machines (issue 32): session start at any size, sync cost, staleness, 4 writers.

    python -m scripts.bench_sync [--data-dir DIR] [--sizes 1000,20000,100000] [--runs 10] [--baseline SRC]
                                 [--changes 5000] [--lag-samples 10] [--writers 4 --per-writer 100]
                                 [--writers-src SRC] [--no-reader] [--only PHASES] [--json]

A Chroma server is started on 127.0.0.1 over `--data-dir` (kept: the stores of each size are filled once, by
`Store.import_memories` through this automem, and reused by later runs). Each "machine" is its own Hermes root
(own lock, own recall index) pointing at one database of that server. Figures printed:

1. session start: the system block in a fresh process (`hermes chat` starts one), p50 / p95 wall ms over --runs,
   at each size: `synced` (the index synced less than server_sync_s ago: no request), `stale` (the last sync an hour
   ago, nothing changed since: one incremental sync within server_wait_s), and with `--baseline SRC` (a checkout of
   automem before this change, e.g. `git archive main automem | tar -x -C SRC`) the old behaviour: an index older
   than 60 s rebuilt from the whole store, chromadb loaded into the process.
2. sync after another machine writes --changes memories: one machine imports them, the other syncs (wall s), then
   a fresh session starts (its block within server_wait_s or not).
3. staleness: one machine's resident syncs every server_sync_s; another writes a memory; how long until it is in the
   first machine's index (--lag-samples writes). And with the server hung (SIGSTOP): the session start.
4. --writers machines write --per-writer memories each through the write path at once into the largest store,
   while a reader machine starts sessions: writes/s, write p50/p95, session start p50/p95, reader lag. With
   `--writers-src SRC` the writers run the automem in SRC (e.g. the code before this change).

Text output: the harness's header line, then one JSON line per phase as it ends; `--json`: one JSON object at the
end (the phase lines go to stderr as progress).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.harness import (
    REPO,
    Stopwatch,
    child_env,
    commit,
    header,
    percentile,
    print_json,
    python_m,
    run_child,
    stop_residents,
    temp_root,
)
from scripts.stress_store import memory_bank, memory_text

ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def p(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1),
            "max": round(max(values), 1), "n": len(values)} if values else {}


def machine(base: Path, name: str, url: str, db: str, **extra) -> Path:
    root = base / name
    root.mkdir(parents=True, exist_ok=True)
    settings = {"chroma_url": url, "chroma_database": db, "resident": "false", **extra}
    (root / "config.yaml").write_text("automem:\n" + "".join(f"  {k}: {v}\n" for k, v in settings.items()),
                                      encoding="utf-8")
    return root


def database_of(url: str, size: int) -> str:
    """`bench-<size>` on the server, filled to `size` memories once (kept for later runs)."""
    import requests

    from automem.config import Config
    from automem.core.store import Store
    from automem.paths import Location

    name = f"bench-{size}"
    base = f"{url}/api/v2/tenants/default_tenant/databases"
    if requests.get(f"{base}/{name}", timeout=10).status_code == 404:
        requests.post(base, json={"name": name}, timeout=10).raise_for_status()
    with temp_root(prefix="automem-bench-sync-fill-") as tmp:
        store = Store(Location(tmp, "default"), Config(chroma_url=url, chroma_database=name))
        have = store.count()
        if have < size:
            mems = memory_bank(size)[have:]
            with Stopwatch() as sw:
                store.import_memories(mems)
            print(f"# filled {name}: {len(mems)} memories in {sw.s:.0f} s", file=sys.stderr, flush=True)
        store.close()
    return name


# The children below are `python -c` strings, not `python -m scripts.bench_sync` modes: with --baseline and
# --writers-src they import the automem of another checkout (its folder as cwd and PYTHONPATH), which has no
# scripts/ of this one. They import automem alone and print what they measured, and which automem they ran.
SESSION = """
import json, sys, time
t0 = time.perf_counter()
import automem
from automem.config import load_config
from automem.core.recall import system_prompt_block
from automem.paths import Location
loc = Location.resolve(sys.argv[1])
cfg = load_config(loc)
t1 = time.perf_counter()
text, ids = system_prompt_block(loc, cfg)
t2 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1000, "block_ms": (t2 - t1) * 1000, "items": len(ids),
                  "chromadb": "chromadb" in sys.modules, "automem": automem.__file__}))
"""


def automem_env(root: Path, src: str | None) -> tuple[dict, str]:
    """The environment and cwd of a child that imports the automem of `src` (a folder holding automem/), or of
    this checkout: that folder first on the path, the caller's AUTOMEM_* settings left out, one BLAS thread."""
    env = child_env(root, AUTOMEM_RESIDENT="false", **ONE_THREAD)
    if src:
        env["PYTHONPATH"] = src  # not this checkout's automem beside it
    return env, src or str(REPO)


def check_ran(child: dict, src: str | None) -> None:
    """The automem a child imported is the one asked for (a stray cwd or PYTHONPATH would shadow it)."""
    want = Path(src or REPO).resolve() / "automem"
    if Path(child["automem"]).resolve().parent != want:
        raise RuntimeError(f"the child ran {child['automem']}, not {want}")


def session_start(root: Path, src: str | None = None) -> dict:
    """One fresh process's system block (what `hermes chat` asks on its start path)."""
    env, cwd = automem_env(root, src)
    out = run_child([sys.executable, "-c", SESSION, str(root)], env=env, cwd=cwd)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"session failed: {out.stderr[-2000:]}")
    result = json.loads(lines[-1])
    check_ran(result, src)
    return {**result, "wall_ms": out.wall_s * 1000}


def set_synced(root: Path, ago_s: float, cursor_now: bool = True) -> None:
    from automem.config import load_config
    from automem.core import index
    from automem.paths import Location

    now = time.time()
    values = {"synced_at": str(now - ago_s)}
    if cursor_now:  # nothing changed since, nor within the margin read again (the fills are older than that)
        margin = load_config(Location(root, "default")).server_sync_margin_s
        values["sync_cursor"] = str(int((now + margin) * 1000))
    index.note_meta(Location(root, "default"), values)


def sync_now(root: Path) -> dict:
    from automem.config import load_config
    from automem.core import sync
    from automem.paths import Location

    loc = Location(root, "default")
    return sync.sync(loc, load_config(loc), force=True).to_json()


def age_baseline_index(root: Path) -> None:
    """Make the old code's recall index an hour old (it rebuilt an index older than 60 s from the whole store)."""
    from automem.paths import Location

    idx = Location(root, "default").automem_dir / "index" / "recall.sqlite3"
    conn = sqlite3.connect(str(idx))
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'built_at'", (str(time.time() - 3600),))
        conn.commit()
    finally:
        conn.close()


def bench_sessions(base: Path, url: str, sizes: list[int], runs: int, baseline: str | None,
                   show=print) -> dict:
    out = {}
    for size in sizes:
        db = database_of(url, size)
        root = machine(base, f"reader-{size}", url, db)
        first = sync_now(root)  # this machine's first index of the store (a full read, once)
        row: dict = {"first_sync_s": first["seconds"]}
        for case, ago in (("synced", 0.0), ("stale", 3600.0)):
            walls, blocks = [], []
            for _ in range(runs):
                set_synced(root, ago)
                r = session_start(root)
                walls.append(r["wall_ms"])
                blocks.append(r["block_ms"])
                assert not r["chromadb"], "a session start loaded chromadb"
            row[case] = {"wall_ms": p(walls), "block_ms": p(blocks), "items": r["items"]}
        if baseline:
            old = machine(base, f"baseline-{size}", url, db)
            session_start(old, baseline)  # its first index
            walls, blocks, loaded = [], [], []
            for _ in range(max(1, runs // 3) if size > 20000 else runs):
                age_baseline_index(old)
                r = session_start(old, baseline)
                walls.append(r["wall_ms"])
                blocks.append(r["block_ms"])
                loaded.append(r["chromadb"])
            row["baseline_stale"] = {"wall_ms": p(walls), "block_ms": p(blocks), "loaded_chromadb": all(loaded)}
        out[size] = row
        show(json.dumps({"session_start": {size: row}}))
    return out


def bench_changes(base: Path, url: str, size: int, changes: int) -> dict:
    """Machine B synced; machine A imports `changes` memories; B syncs (and a fresh session starts)."""
    from automem.config import Config
    from automem.core import index
    from automem.core.memory import Memory, memory_id
    from automem.core.store import Store
    from automem.paths import Location

    db = database_of(url, size)
    reader = machine(base, f"reader-{size}", url, db)
    sync_now(reader)
    writer = Store(Location(machine(base, "writer-import", url, db), "default"),
                   Config(chroma_url=url, chroma_database=db))
    tag = int(time.time())
    mems = [Memory(id=memory_id("default", "user", f"batch {tag} note {i}: " + memory_text(77, i)),
                   text=f"batch {tag} note {i}: " + memory_text(77, i), wing="user", profile="default",
                   created_at=tag, updated_at=tag) for i in range(changes)]
    with Stopwatch() as write:
        writer.import_memories(mems)
    writer.close()
    set_synced(reader, 3600.0, cursor_now=False)  # its next session wants a sync (the cursor is where it was)
    session = session_start(reader)
    meta = index.meta_of(Location(reader, "default"))
    in_session = time.time() - index.synced_at(meta) < 60
    if not in_session:
        set_synced(reader, 3600.0, cursor_now=False)
    report = sync_now(reader)
    return {"changes": changes, "store": size + changes, "writer_import_s": round(write.s, 1),
            "sync_s": report["seconds"], "read": report["read"], "full": report["full"],
            "session_after": {"block_ms": round(session["block_ms"], 1), "synced_within_budget": in_session}}


def wait_visible(location, memory_id: str, timeout_s: float) -> bool:
    """Poll `location`'s recall index until `memory_id` is in it (or `timeout_s` passed)."""
    from automem.core import index

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if index.visible_ids(location, [memory_id], None):
            return True
        time.sleep(0.05)
    return False


def bench_staleness(base: Path, url: str, size: int, samples: int) -> dict:
    """A resident on the reader syncs every server_sync_s; the lag from a write elsewhere to the reader's index."""
    from automem.config import load_config
    from automem.core.store import open_store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    db = database_of(url, size)
    reader = machine(base, "reader-resident", url, db, resident="true")
    sync_now(reader)
    proc = subprocess.Popen(python_m("automem.core.resident", "--hermes-home", str(reader)),
                            env=child_env(reader, **ONE_THREAD), cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    lags = []
    loc_w = Location(machine(base, "writer-lag", url, db), "default")
    writer = open_store(loc_w, load_config(loc_w))
    rl = Location(reader, "default")
    try:
        time.sleep(5)
        rng = random.Random(3)
        for n in range(samples):
            time.sleep(rng.uniform(0, 10))
            text = f"lag probe {int(time.time())}-{n}: the user's desk plant number {n} needs water"
            [d] = remember(writer, [Candidate(text, wing="user")])
            with Stopwatch() as lag:
                seen = wait_visible(rl, d.id, 120)
            if seen:
                lags.append(lag.s)
        cfg = load_config(rl)
    finally:
        writer.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        stop_residents(reader)  # any other resident serving that root (none is expected)
    return {"server_sync_s": cfg.server_sync_s, "lag_s": {k: round(v / 1000, 2) for k, v in
                                                          p([x * 1000 for x in lags]).items() if k != "n"},
            "samples": len(lags)}


def bench_hung(base: Path, server, size: int, runs: int) -> dict:
    """The session start with the server hung (SIGSTOP) and down, the index an hour old."""
    db = database_of(server.url, size)
    root = machine(base, f"reader-{size}", server.url, db)
    out = {}
    pgid = os.getpgid(server.proc.pid)
    for case in ("hung",):
        walls = []
        os.killpg(pgid, signal.SIGSTOP)
        try:
            for _ in range(runs):
                set_synced(root, 3600.0)
                r = session_start(root)
                walls.append(r["wall_ms"])
                assert r["items"] > 0
        finally:
            os.killpg(pgid, signal.SIGCONT)
        out[case] = {"wall_ms": p(walls)}
    return out


# A writer machine: argv root, profile; stdin: a JSON list of texts, then "go"; one JSON line per write appended to
# root/writes.jsonl (a file, not a pipe: the parent reads nothing while the writers run).
WRITER = """
import json, sys, time
import automem
from automem.paths import Location
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
root, profile = sys.argv[1], sys.argv[2]
texts = json.loads(sys.stdin.readline())
store = Store(Location.resolve(root))
store.embed(["warm up"]); store.count()
print("READY " + automem.__file__, flush=True)
sys.stdin.readline()
with open(root + "/writes.jsonl", "a", encoding="utf-8") as out:
    for text in texts:
        t = time.perf_counter()
        [d] = remember(store, [Candidate(text, wing="episodic", profile=profile)])
        out.write(json.dumps({"ms": (time.perf_counter() - t) * 1000, "action": d.action, "at": time.time(),
                              "id": d.id}) + "\\n")
        out.flush()
store.close()
"""


def bench_writers(base: Path, url: str, size: int, writers: int, per_writer: int, src: str | None = None,
                  sessions: bool = True) -> dict:
    from automem.core import index
    from automem.paths import Location

    db = database_of(url, size)
    reader = machine(base, "reader-during-writes", url, db)
    sync_now(reader)
    procs, roots = [], []
    tag = f"{time.time():.0f}"  # new memories on every run
    for w in range(writers):
        root = machine(base, f"writer-{w}", url, db)
        env, cwd = automem_env(root, src)
        err = open(root / "stderr.log", "w", encoding="utf-8")
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(root), f"w{w}"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=cwd))
        err.close()
        roots.append(root)
        texts = [f"run {tag}: " + memory_text(200 + w, i) for i in range(per_writer)]
        procs[-1].stdin.write(json.dumps(texts) + "\n")
        procs[-1].stdin.flush()
    for pr, root in zip(procs, roots):
        ready = pr.stdout.readline().split(" ", 1)
        if ready[0] != "READY":
            raise RuntimeError(f"a writer did not start: {(root / 'stderr.log').read_text()[-2000:]}")
        check_ran({"automem": ready[1].strip()}, src)
    starts: list[float] = []
    rl = Location(reader, "default")
    with Stopwatch() as elapsed:
        for pr in procs:
            pr.stdin.write("go\n")
            pr.stdin.flush()
        while any(pr.poll() is None for pr in procs):
            if sessions:
                r = session_start(reader)  # each start older than server_sync_s syncs what the writers wrote
                starts.append(r["wall_ms"])
            time.sleep(2)
    records = []
    for pr, root in zip(procs, roots):
        pr.communicate(timeout=60)
        if pr.returncode != 0:
            raise RuntimeError((root / "stderr.log").read_text()[-2000:])
        lines = (root / "writes.jsonl").read_text(encoding="utf-8").splitlines()
        records += [json.loads(ln) for ln in lines if ln.startswith("{")]
    report = sync_now(reader)
    missing = [r["id"] for r in records if not index.visible_ids(rl, [r["id"]], None)]
    return {"writers": writers, "writes": len(records), "store": size, "elapsed_s": round(elapsed.s, 1),
            "writes_per_s": round(len(records) / elapsed.s, 1), "write_ms": p([r["ms"] for r in records]),
            "writers_src": src or f"this automem ({commit()})", "session_start_ms_during": p(starts),
            "final_sync": report, "missing_in_reader_index": len(missing),
            "actions": {a: sum(r["action"] == a for r in records) for a in {r["action"] for r in records}}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "automem-bench-sync"),
                    help="the server's data, kept between runs (the filled stores are reused)")
    ap.add_argument("--sizes", default="1000,20000,100000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--baseline", default=None, help="a checkout of automem before server sync (its parent dir)")
    ap.add_argument("--changes", type=int, default=5000)
    ap.add_argument("--lag-samples", type=int, default=10)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--per-writer", type=int, default=100)
    ap.add_argument("--writers-src", default=None,
                    help="the automem the writers run (the folder holding automem/; default: this one)")
    ap.add_argument("--no-reader", action="store_true", help="writers only: no sessions started meanwhile")
    ap.add_argument("--only", default="sessions,changes,staleness,hung,writers")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from tests.support.chroma_server import ChromaServer

    sizes = [int(s) for s in args.sizes.split(",") if s]
    only = set(args.only.split(","))
    baseline = str(Path(args.baseline).resolve()) if args.baseline else None
    writers_src = str(Path(args.writers_src).resolve()) if args.writers_src else None
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    port_file = data / "port"
    port = int(port_file.read_text()) if port_file.exists() else None

    def show(line: str) -> None:  # a phase's figures as it ends: the output, or progress beside --json's
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    if not args.json:
        print(header("bench_sync"), flush=True)
    result: dict = {"sizes": sizes, "load_average": [round(x, 2) for x in os.getloadavg()]}
    with temp_root(prefix="automem-bench-sync-") as base:
        server = ChromaServer(data / "server", port=port).start(timeout=300)
        try:
            port_file.write_text(str(server.port))
            if "sessions" in only:
                result["session_start"] = bench_sessions(base, server.url, sizes, args.runs, baseline, show)
            if "hung" in only:
                result["hung_server"] = bench_hung(base, server, max(sizes), max(3, args.runs // 2))
                show(json.dumps({"hung_server": result["hung_server"]}))
            if "changes" in only:
                result["after_changes"] = bench_changes(base, server.url, max(sizes), args.changes)
                show(json.dumps({"after_changes": result["after_changes"]}))
            if "staleness" in only:
                result["staleness"] = bench_staleness(base, server.url, max(sizes), args.lag_samples)
                show(json.dumps({"staleness": result["staleness"]}))
            if "writers" in only:
                result["writers"] = bench_writers(base, server.url, max(sizes), args.writers, args.per_writer,
                                                  writers_src, not args.no_reader)
                show(json.dumps({"writers": result["writers"]}))
        finally:
            server.stop()
    if args.json:
        print_json(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
