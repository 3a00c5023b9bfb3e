#!/usr/bin/env python3
"""Several processes write one embedded store at the same time, and a writer is SIGKILLed mid-batch.

    python -m scripts.stress_store [--procs 8] [--per-proc 100] [--kill-rounds 3] [--root DIR] [--json]

Prints how many memories each writer reported stored, how many the store holds afterwards, whether every reported
id is there, and whether the store reopens. Exit 1 if anything was lost. Without --root the store is made in a
temporary folder, removed at the end. Used by tests/test_concurrency.py (which runs it as a process).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import time
from contextlib import nullcontext
from pathlib import Path

from scripts.harness import REPO, header, print_json, python_m, temp_root

# Real sentences, one per writer and index, each about a different (made-up) thing, so none is a restatement of
# another: the write path stores every one of them (as new, or as an update of a similar one).
SUBJECTS = ["service", "dataset", "script", "dashboard", "cluster", "notebook", "pipeline", "library", "bucket",
            "report", "cron job", "queue", "index", "mirror", "gateway", "schema", "template", "runner", "cache",
            "webhook"]
FACTS = ["is owned by team {a}", "runs every {n} minutes", "lives in folder /srv/{a}/{b}",
         "was renamed to {a}-{b}", "needs {n} GB of memory", "must be restarted after {a} updates",
         "is documented on page {a}/{b}", "alerts the {a} channel", "keeps {n} days of history",
         "depends on the {a} module"]
WORDS = ["amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel",
         "lumen", "marble", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra", "umber", "violet",
         "willow", "xenon", "yarrow", "zephyr"]


def memory_text(writer: int, i: int) -> str:
    a = WORDS[(writer * 7 + i) % len(WORDS)]
    b = WORDS[(writer * 3 + i * 5) % len(WORDS)]
    subject = SUBJECTS[(writer + i) % len(SUBJECTS)]
    fact = FACTS[(i // len(SUBJECTS) + writer) % len(FACTS)].format(a=a, b=b, n=writer * 100 + i + 2)
    return f"The {a} {subject} #{writer}-{i} {fact}"


def memory_bank(size: int) -> list:
    """`size` distinct memories spread over three profiles and the three wings (the benchmarks' stores)."""
    from automem.core.memory import Memory, memory_id

    mems = []
    for i in range(size):
        text = memory_text(i % 50, i)
        wing = ("user", "episodic", "instruction")[i % 3]
        prof = ("default", "blog-writer", "editor")[i % 3]
        mems.append(Memory(id=memory_id(prof, wing, text), text=text, wing=wing, profile=prof,
                           created_at=1_700_000_000 + i, updated_at=1_700_000_000 + i))
    return mems


def worker(root: str, writer: int, count: int, start: int = 0) -> int:
    """Add `count` memories one by one; print `STORED <id>` only after the write path returned."""
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    store = Store(Location.resolve(root))
    for i in range(start, start + count):
        [d] = remember(store, [Candidate(memory_text(writer, i), wing="episodic", profile=f"w{writer}")])
        if d.action in ("new", "update"):
            print(f"STORED {d.id}", flush=True)
        else:
            print(f"NOTSTORED {d.action} {d.reason}", flush=True)
    store.close()
    return 0


def _spawn(root: str, writer: int, count: int, start: int = 0) -> subprocess.Popen:
    return subprocess.Popen(python_m("scripts.stress_store", "--worker", str(writer), "--root", root, "--count",
                                     str(count), "--start", str(start)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def _reported(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("STORED ")]


def concurrent_writers(root: str, procs: int, per_proc: int) -> dict:
    t0 = time.time()
    children = [_spawn(root, w, per_proc) for w in range(procs)]
    reported: list[str] = []
    errors = []
    for c in children:
        out, err = c.communicate(timeout=900)
        reported += _reported(out)
        if c.returncode != 0:
            errors.append(err.strip().splitlines()[-1:] or [f"exit {c.returncode}"])
    elapsed = time.time() - t0
    return {"procs": procs, "per_proc": per_proc, "reported_stored": len(reported), "errors": errors,
            "seconds": round(elapsed, 2), "writes_per_s": round(len(reported) / elapsed, 1), "ids": reported}


def killed_writer(root: str, rounds: int, per_round: int = 400, writer: int = 99) -> dict:
    """Start a writer, SIGKILL it after a varying number of reported writes, `rounds` times."""
    reported: list[str] = []
    start = 0
    kills = []
    for r in range(rounds):
        child = _spawn(root, writer, per_round, start)
        after = 5 + 7 * r  # kill after this many reported writes: the next one is in flight
        seen = 0
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("STORED "):
                reported.append(line.split()[1])
                seen += 1
            if seen >= after:
                time.sleep(0.003 * r)  # land the kill at different points of the next write
                child.send_signal(signal.SIGKILL)
                break
        rest, _ = child.communicate(timeout=60)
        reported += _reported(rest)
        kills.append({"round": r, "killed_after_reported": seen, "returncode": child.returncode})
        start += per_round
    return {"kills": kills, "reported_stored": len(reported), "ids": reported}


def check(root: str, ids: list[str]) -> dict:
    """Reopen the store in a fresh process-like state and check every reported id is there."""
    from automem.core.store import Store
    from automem.paths import Location

    store = Store(Location.resolve(root))
    present = {m.id for m in store.get(ids)} if ids else set()
    total = store.count()
    # The store must still take writes and answer vector queries after the kills.
    from automem.core.write_path import Candidate, remember

    [d] = remember(store, [Candidate("After the stress run the store still accepts writes", wing="episodic")])
    hit = store.search("does the store still accept writes", k=1, profile="default")
    store.close()
    return {"stored_total": total, "missing": sorted(set(ids) - present), "reopen_write": d.action,
            "reopen_query_ok": bool(hit and hit[0][0].id == d.id)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--per-proc", type=int, default=100)
    ap.add_argument("--kill-rounds", type=int, default=3)
    ap.add_argument("--root", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        return worker(args.root, args.worker, args.count, args.start)
    with (nullcontext(Path(args.root)) if args.root else temp_root(prefix="automem-stress-")) as root:
        return run(str(root), args)


def run(root: str, args: argparse.Namespace) -> int:
    result: dict = {"root": root}
    conc = concurrent_writers(root, args.procs, args.per_proc)
    ids = conc.pop("ids")
    result["concurrent"] = conc
    if args.kill_rounds:
        kill = killed_writer(root, args.kill_rounds)
        ids += kill.pop("ids")
        result["killed"] = kill
    result["check"] = check(root, ids)
    result["ok"] = (not result["check"]["missing"] and not conc["errors"]
                    and conc["reported_stored"] == args.procs * args.per_proc
                    and result["check"]["stored_total"] >= len(ids)
                    and result["check"]["reopen_query_ok"])
    if args.json:
        print_json(result)
    else:
        c, k = result["concurrent"], result.get("killed", {})
        print(header("stress_store"))
        print(f"{c['procs']} writers x {c['per_proc']}: {c['reported_stored']} reported stored in {c['seconds']} s "
              f"({c['writes_per_s']} writes/s through the write path), errors: {c['errors'] or 'none'}")
        if k:
            print(f"SIGKILLed writer: {len(k['kills'])} kills, {k['reported_stored']} writes reported before the "
                  f"kills")
        ch = result["check"]
        print(f"store after: {ch['stored_total']} memories, missing reported ids: {len(ch['missing'])}, "
              f"reopen write: {ch['reopen_write']}, vector query after reopen: "
              f"{'ok' if ch['reopen_query_ok'] else 'FAILED'}")
        print("OK" if result["ok"] else "FAILED")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
