#!/usr/bin/env python3
"""Writers on several "machines" share one Chroma server: nothing is lost, racing copies of a fact collapse.

    python -m scripts.stress_server [--url URL --database DB] [--procs 4] [--per-proc 200] [--rounds 10] [--json]

Every writer process gets its own Hermes root (so its own write lock, as on separate machines: nothing
serialises them) and the same `chroma_url` + database. Without --url a Chroma server is started on 127.0.0.1
for the run (tests/support/chroma_server.py); without --database a fresh one is created.

Phases, each printed with its figures:
1. concurrent: `--procs` writers add `--per-proc` distinct memories each through the write path, one by one, at
   once. Every id a writer reports stored must be on the server afterwards.
2. same fact: `--rounds` times, two writers add the same sentence at the same moment (both wait on a go-file),
   and two writers add two wordings of one fact. The identical sentence must leave one memory (deterministic id).
   The two wordings may both land as new (no lock between machines); `automem compact` then leaves one.
3. compact: run once more to show it is idempotent (merges nothing).
Exit 1 if anything was lost or a fact stayed duplicated after compact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

from scripts.harness import REPO, header, print_json, python_m, temp_root
from scripts.stress_store import memory_text  # distinct sentences, none a restatement of another

# (identical sentence, first wording, second wording of the same fact): the dedup decision calls each pair of
# wordings a duplicate when it sees one after the other.
SAME_FACTS = [
    ("The nightly backup of the wiki finished at 03:10", "项目统一用Python 3.11", "项目统一使用 Python 3.11"),
    ("We moved the office plants to the balcony", "I use vim, not nano", "I use vim and not nano"),
    ("周五下午和设计组开了评审会", "博客文章的日期必须是RFC3339格式", "博客文章日期必须用RFC3339格式"),
    ("The printer on floor two was repaired", "Always answer in English", "Always reply in English"),
    ("昨天把旧服务器的硬盘送去销毁了", "提交信息用英文写", "提交信息要用英文写"),
    ("Marketing approved the new logo colours", "用户喜欢暗色主题", "用户偏好暗色主题"),
    ("年会的场地定在杭州西湖边", "Deploy only after running hugo --minify", "Only deploy after running hugo --minify"),
    ("The intern finished the onboarding course", "用户住在上海", "用户住在上海市"),
    ("仓库里的测试数据已经清理过一遍", "My cat is called Miso", "My cat's name is Miso"),
    ("The quarterly invoice was sent to the client", "每篇文章都要配一张封面图", "每篇文章都要配封面图"),
]


def write_config(root: str, url: str, database: str) -> None:
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "config.yaml"), "w", encoding="utf-8") as fh:
        fh.write(f"automem:\n  chroma_url: {url}\n  chroma_database: {database}\n")


def open_root(root: str):
    from automem.core.store import Store
    from automem.paths import Location

    return Store(Location.resolve(root))


# -- workers (child processes) ---------------------------------------------------------------------------------
def worker_distinct(root: str, writer: int, count: int) -> int:
    from automem.core.write_path import Candidate, remember

    store = open_root(root)
    for i in range(count):
        [d] = remember(store, [Candidate(memory_text(writer, i), wing="episodic", profile=f"w{writer}")])
        print(json.dumps({"action": d.action, "id": d.id, "reason": d.reason}), flush=True)
    store.close()
    return 0


def worker_rounds(root: str, go_dir: str, texts: list[str], wing: str) -> int:
    """For round r: wait for go_dir/go.<wing>.r, then add texts[r]. The model is loaded before the first go."""
    from automem.core.write_path import Candidate, remember

    store = open_root(root)
    store.embed(["warm up"])
    store.count()
    print("READY", flush=True)
    for r, text in enumerate(texts):
        go = os.path.join(go_dir, f"go.{wing}.{r}")
        while not os.path.exists(go):
            time.sleep(0.0005)
        [d] = remember(store, [Candidate(text, wing=wing, profile="default")])
        print(json.dumps({"round": r, "action": d.action, "id": d.id}), flush=True)
    store.close()
    return 0


# Each writer embeds with numpy; with one BLAS thread pool per process, as many writers as cores spin against
# each other (measured on 2 cores: 4 writers x 50 writes took 95 s with the default pools, 31 s with one thread).
WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(python_m("scripts.stress_server", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **WORKER_ENV}, cwd=REPO)


# -- phases ----------------------------------------------------------------------------------------------------
def phase_concurrent(base: str, url: str, database: str, procs: int, per_proc: int) -> dict:
    roots = []
    for w in range(procs):
        root = os.path.join(base, f"machine{w}")
        write_config(root, url, database)
        roots.append(root)
    t0 = time.time()
    children = [_spawn(["--worker-distinct", str(w), "--root", roots[w], "--count", str(per_proc)])
                for w in range(procs)]
    stored: list[str] = []
    actions: dict[str, int] = {}
    errors = []
    for c in children:
        out, err = c.communicate(timeout=1800)
        if c.returncode != 0:
            errors.append(err.strip().splitlines()[-1:] or [f"exit {c.returncode}"])
        for line in out.splitlines():
            d = json.loads(line)
            actions[d["action"]] = actions.get(d["action"], 0) + 1
            if d["action"] in ("new", "update"):
                stored.append(d["id"])
    seconds = time.time() - t0
    store = open_root(roots[0])
    found = {m.id for m in store.get(stored)}
    total = store.count()
    store.close()
    missing = sorted(set(stored) - found)
    return {"procs": procs, "per_proc": per_proc, "actions": actions, "reported_stored": len(stored),
            "on_server": total, "missing": missing, "errors": errors, "seconds": round(seconds, 1),
            "writes_per_s": round(procs * per_proc / seconds, 1)}


def phase_same_fact(base: str, url: str, database: str, rounds: int) -> dict:
    """Two writers per round add the same sentence; two more add two wordings of one fact."""
    facts = SAME_FACTS[:rounds]  # distinct topics: no round's sentence restates another round's
    same = [f[0] for f in facts]
    plans = {"same-a": same, "same-b": same, "wording-a": [f[1] for f in facts], "wording-b": [f[2] for f in facts]}
    go_dir = tempfile.mkdtemp(prefix="go-", dir=base)
    children = {}
    for name, texts in plans.items():
        root = os.path.join(base, name)
        write_config(root, url, database)
        wing = "episodic" if name.startswith("same") else "user"
        children[name] = _spawn(["--worker-rounds", "--root", root, "--go", go_dir, "--texts", json.dumps(texts),
                                 "--wing", wing])
    for name, c in children.items():
        line = c.stdout.readline()
        if line.strip() != "READY":
            raise SystemExit(f"worker {name} did not start: {c.stderr.read()[-2000:]}")
    results: dict[str, list[dict]] = {name: [] for name in children}
    for r in range(rounds):
        # One pair at a time, so the two writers of a pair do not wait for a core (2-core machines).
        for wing, pair in (("episodic", ("same-a", "same-b")), ("user", ("wording-a", "wording-b"))):
            open(os.path.join(go_dir, f"go.{wing}.{r}"), "w").close()  # both writers of the pair start now
            for name in pair:
                results[name].append(json.loads(children[name].stdout.readline()))
    for c in children.values():
        c.communicate(timeout=300)

    store = open_root(os.path.join(base, "same-a"))
    identical = []
    for r, text in enumerate(same):
        hits = [m for m in store.list(profile="default", include_hidden=True) if m.text == text]
        identical.append({"round": r, "records": len(hits),
                          "actions": [results["same-a"][r]["action"], results["same-b"][r]["action"]]})
    wordings_before = _active_wordings(store, plans)
    from automem.ops.compact import compact

    report = compact(store)
    wordings_after = _active_wordings(store, plans)
    again = compact(store)
    store.close()
    return {"rounds": rounds,
            "decisions_per_round": [{name: results[name][r]["action"] for name in results} for r in range(rounds)],
            "identical_records_per_round": [x["records"] for x in identical],
            "identical_both_new": sum(x["actions"] == ["new", "new"] for x in identical),
            "wordings_both_new": sum(results["wording-a"][r]["action"] == results["wording-b"][r]["action"] == "new"
                                     for r in range(rounds)),
            "wordings_active_before_compact": wordings_before,
            "wordings_active_after_compact": wordings_after,
            "compact": report.to_json(), "compact_again": again.to_json()}


def _active_wordings(store, plans: dict) -> list[int]:
    active = {m.text for m in store.list(profile="default")}
    return [int(a in active) + int(b in active) for a, b in zip(plans["wording-a"], plans["wording-b"])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--database")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--per-proc", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=len(SAME_FACTS), help=f"at most {len(SAME_FACTS)}")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker-distinct", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--worker-rounds", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--go", help=argparse.SUPPRESS)
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    ap.add_argument("--wing", default="user", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= len(SAME_FACTS):
        ap.error(f"--rounds must be 1..{len(SAME_FACTS)}")
    if args.worker_distinct is not None:
        return worker_distinct(args.root, args.worker_distinct, args.count)
    if args.worker_rounds:
        return worker_rounds(args.root, args.go, json.loads(args.texts), args.wing)

    with temp_root(prefix="automem-stress-server-") as base:
        return run(str(base), args)


def run(base: str, args: argparse.Namespace) -> int:
    from tests.support.chroma_server import ChromaServer, create_database

    server = None
    url = args.url
    if not url:
        server = ChromaServer(os.path.join(base, "server")).start()
        url = server.url
    try:
        database = args.database or create_database(url, f"stress-{int(time.time())}-{os.getpid()}")
        result = {"url": url, "database": database,
                  "concurrent": phase_concurrent(base, url, database, args.procs, args.per_proc),
                  "same_fact": phase_same_fact(base, url, database, args.rounds)}
    finally:
        if server is not None:
            server.stop()
    conc, same = result["concurrent"], result["same_fact"]
    result["ok"] = (not conc["missing"] and not conc["errors"]
                    and conc["reported_stored"] == args.procs * args.per_proc
                    and all(n == 1 for n in same["identical_records_per_round"])
                    and all(n == 1 for n in same["wordings_active_after_compact"])
                    and same["compact_again"]["merged"] == 0)
    if args.json:
        print_json(result)
    else:
        print(header("stress_server"))
        print(f"server {url}, database {database}")
        print(f"concurrent: {conc['procs']} writers x {conc['per_proc']} writes in {conc['seconds']} s "
              f"({conc['writes_per_s']}/s): {conc['reported_stored']} reported stored, {conc['on_server']} on the "
              f"server, missing {len(conc['missing'])}, errors {len(conc['errors'])}; decisions {conc['actions']}")
        print(f"same sentence, two writers at once, {same['rounds']} rounds: records per round "
              f"{same['identical_records_per_round']} (both writers said new in {same['identical_both_new']})")
        print(f"two wordings at once (both writers said new in {same['wordings_both_new']}): active per round "
              f"before compact {same['wordings_active_before_compact']}, "
              f"after {same['wordings_active_after_compact']}; compact merged {same['compact']['merged']} in "
              f"{same['compact']['seconds']} s, a second compact merged {same['compact_again']['merged']}")
        print("OK" if result["ok"] else "FAILED")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
