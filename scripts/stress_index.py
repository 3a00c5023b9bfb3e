#!/usr/bin/env python3
"""Writers importing batches of 256 into one embedded store at once, some SIGKILLed mid-batch: does the recall index
cover what Chroma holds afterwards, and when it does not, does it know?

    python -m scripts.stress_index [--rounds 7] [--writers 3] [--batches 6] [--kills 4] [--readers 1] [--seed 1]
                                   [--json]

Each round: a fresh root; `--writers` processes each add `--batches` batches of 256 memories (random vectors, the path
`automem import` takes: Store.write_records, index first, then Chroma); `--kills` times a random writer is SIGKILLed
at a random moment and a new one takes its place; every writer, and `--readers` long-lived readers, rebuild the index
when they find it stale (as drainers and the resident do). Then, before anything opens the store through automem, the
checker reads Chroma's records and the index's rows directly, and prints per round: records in Chroma, rows in the
index, how many Chroma records the index lacks ("missing") and whether the index called itself fresh all the same
("silent"). Then a reader opens the store the way recall does (`Store.ensure_index`) and the check is made again
("after a reader"). Exit 1 when any round ends with a gap after a reader. """

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import subprocess
import time

from scripts.harness import REPO, header, print_json, python_m, temp_root

BATCH = 256
DIM = 512


def worker(root: str, writer: int, batches: int, seed: int) -> int:
    """Add `batches` batches of BATCH memories; print `BATCH <n>` after each returned."""
    import numpy as np

    from automem.core.memory import Memory
    from automem.core.store import Store
    from automem.paths import Location

    rng = np.random.default_rng(seed)
    store = Store(Location.resolve(root))
    for b in range(batches):
        mems = [Memory(id=f"m_{writer:04d}{seed % 10000:04d}{b:04d}{i:012d}",
                       text=f"writer {writer} batch {b} item {i}",
                       wing="episodic", profile="default", room="import", created_at=1_700_000_000 + i,
                       updated_at=1_700_000_000 + i) for i in range(BATCH)]
        vecs = rng.normal(size=(BATCH, DIM)).astype("float32")
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        print(f"ADD {b}", flush=True)  # the parent aims its kills at the write that follows
        store.write_records(mems, vecs.tolist())
        print(f"BATCH {b}", flush=True)
        store.ensure_index()  # a writer that also reads (a drainer, the resident): it rebuilds a stale index
    store.close()
    return 0


def reader(root: str, seconds: float) -> int:
    """A long-lived reader (the resident's way): ensure the index is current every 0.2 s, its client kept open."""
    from automem.core.store import Store
    from automem.paths import Location

    store = Store(Location.resolve(root))
    end = time.time() + seconds
    while time.time() < end:
        try:
            store.ensure_index()
        except Exception:  # noqa: BLE001 - a store being written by killed processes: try again
            pass
        time.sleep(0.2)
    store.close()
    return 0


def _spawn(root: str, writer: int, batches: int, seed: int) -> subprocess.Popen:
    return subprocess.Popen(python_m("scripts.stress_index", "--worker", str(writer), "--root", root, "--batches",
                                     str(batches), "--seed", str(seed)),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)


def raw_state(root: str) -> dict:
    """Chroma's records and the index's rows, read without automem's Store (which would repair what it finds)."""
    import chromadb
    from chromadb.config import Settings

    from automem.core import index
    from automem.core.store import read_generation
    from automem.paths import Location

    loc = Location.resolve(root)
    client = chromadb.PersistentClient(path=str(loc.chroma_dir), settings=Settings(anonymized_telemetry=False))
    try:
        col = client.get_collection("memories")
        chroma = set(col.get(include=[])["ids"])
    finally:
        client.close()
    conn = sqlite3.connect(str(index.index_path(loc)))
    try:
        rows = {r[0] for r in conn.execute("SELECT id FROM memories")}
        stamp = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    finally:
        conn.close()
    generation = read_generation(loc)
    fresh = index.is_fresh(loc, generation)
    missing = chroma - rows
    return {"chroma": len(chroma), "index_rows": len(rows), "missing": len(missing), "extra": len(rows - chroma),
            "generation": generation, "stamp": stamp[0] if stamp else None, "fresh": fresh,
            "silent": bool(missing) and fresh}


def after_reader(root: str) -> dict:
    from automem.core.store import Store
    from automem.paths import Location

    store = Store(Location.resolve(root))
    try:
        store.ensure_index()
    finally:
        store.close()
    return raw_state(root)


def one_round(writers: int, batches: int, kills: int, rng: random.Random, readers: int = 1) -> dict:
    """One round in a fresh root (removed afterwards): the kills, then the checks."""
    with temp_root(prefix="automem-stress-index-") as tmp:
        return _round(str(tmp), writers, batches, kills, rng, readers)


def _round(root: str, writers: int, batches: int, kills: int, rng: random.Random, readers: int) -> dict:
    seed = rng.randrange(1 << 30)
    children = {w: _spawn(root, w, batches, seed + w) for w in range(writers)}
    time.sleep(1.0)  # the store exists: readers open it
    readers_ = [subprocess.Popen(python_m("scripts.stress_index", "--reader", "--root", root), cwd=REPO,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(readers)]
    next_writer = writers
    done_kills = 0
    start = time.time()
    while done_kills < kills and time.time() - start < 600:
        alive = [w for w, c in children.items() if c.poll() is None]
        if not alive:
            break
        victim = rng.choice(alive)
        child = children[victim]
        assert child.stdout is not None
        for line in child.stdout:  # wait for it to start a write, then kill it somewhere inside that write
            if line.startswith("ADD ") and rng.random() < 0.6:
                time.sleep(rng.uniform(0.0, 0.6))
                break
        child.send_signal(signal.SIGKILL)
        child.wait()
        done_kills += 1
        children[next_writer] = _spawn(root, next_writer, batches, seed + next_writer)
        next_writer += 1
    for c in children.values():
        try:
            c.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            c.kill()
    for c in readers_:
        c.send_signal(signal.SIGTERM)
        c.wait()
    before = raw_state(root)
    after = after_reader(root)
    return {"root": root, "kills": done_kills, "before": before, "after": after}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--kills", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--readers", type=int, default=1, help="long-lived readers rebuilding a stale index")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--reader", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        return worker(args.root, args.worker, args.batches, args.seed)
    if args.reader:
        return reader(args.root, 1200.0)
    rng = random.Random(args.seed)
    if not args.json:
        print(header("stress_index"), flush=True)
    results = []
    for r in range(args.rounds):
        res = one_round(args.writers, args.batches, args.kills, rng, args.readers)
        results.append(res)
        if not args.json:
            b, a = res["before"], res["after"]
            print(f"round {r}: {res['kills']} kills; chroma {b['chroma']}, index {b['index_rows']}, missing "
                  f"{b['missing']}, extra {b['extra']}, index says fresh: {b['fresh']}"
                  f"{'  <- SILENT GAP' if b['silent'] else ''}; after a reader: missing {a['missing']}, "
                  f"extra {a['extra']}, fresh {a['fresh']}", flush=True)
    summary = {"rounds": len(results), "silent_gaps_before_a_reader": sum(r["before"]["silent"] for r in results),
               "gaps_before_a_reader": sum(r["before"]["missing"] > 0 for r in results),
               "gaps_after_a_reader": sum(r["after"]["missing"] > 0 or r["after"]["extra"] > 0 for r in results)}
    if args.json:
        print_json({"summary": summary, "rounds": results})
    else:
        print(json.dumps(summary))
    return 1 if summary["gaps_after_a_reader"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
