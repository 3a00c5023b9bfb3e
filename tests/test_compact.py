"""`automem compact`: near-duplicates that raced in are merged as the write path would have; nothing else moves.

"Raced in" is made here the way it happens across machines: each memory is stored without its writer seeing the
other (Store.write_records directly, as the write path does after deciding "new" against a store that lacked the other).
Runs on both backends (the `store` fixture).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from automem.cli import main
from automem.core.memory import Memory, memory_id
from automem.core.write_path import Candidate, remember
from automem.ops.compact import compact


def raced(store, *items: tuple[str, str, str, int]) -> list[str]:
    """Store (text, wing, profile, created_at) items, each as if its writer had not seen the others."""
    mems = [Memory(id=memory_id(profile, wing, text), text=text, wing=wing, profile=profile, room="auto-extract",
                   added_by="auto-extract", created_at=t, updated_at=t) for text, wing, profile, t in items]
    for m in mems:  # one write each, in this order: the order the server received them
        store.write_records([m], store.embed([m.text]))
    return [m.id for m in mems]


def state(store, ids):
    return {m.id: (m.status, m.superseded_by) for m in store.get(ids)}


def test_a_raced_duplicate_keeps_the_oldest(store):
    a, b = raced(store, ("项目统一用Python 3.11", "instruction", "default", 1000),
                 ("项目统一使用 Python 3.11", "instruction", "default", 1001))
    report = compact(store, now=2000)
    assert [(m.action, m.kept, m.superseded) for m in report.merges] == [("duplicate", a, b)]
    assert state(store, [a, b]) == {a: ("active", ""), b: ("superseded", a)}
    assert [m.id for m in store.list(profile="default")] == [a]


def test_a_raced_update_supersedes_the_older_value(store):
    old, new = raced(store, ("项目用Python 3.11", "instruction", "default", 1000),
                     ("项目改用Python 3.12", "instruction", "default", 1001))
    report = compact(store, now=2000)
    assert [(m.action, m.kept, m.superseded) for m in report.merges] == [("update", new, old)]
    assert state(store, [old, new]) == {old: ("superseded", new), new: ("active", "")}
    assert store.get([old])[0].updated_at == 2000


def test_three_racing_copies_leave_the_first(store):
    ids = raced(store, ("I use vim, not nano", "user", "default", 1000),
                ("I use vim and not nano", "user", "default", 1000),
                ("I use vim, not nano at all", "user", "default", 1001))
    compact(store)
    st = state(store, ids)
    assert st[ids[0]] == ("active", "")
    assert {st[i][0] for i in ids[1:]} == {"superseded"} and {st[i][1] for i in ids[1:]} <= set(ids)
    assert len(store.list(profile="default")) == 1


def test_a_store_the_write_path_wrote_alone_is_left_as_it_is(store):
    seq = [("项目用Python 3.11", "instruction"), ("I use vim, not nano", "user"),
           ("项目改用Python 3.12", "instruction"), ("用户住在上海", "user"), ("I use vim and not nano", "user"),
           ("用户现在住在北京", "user"),
           ("博客文章的日期必须是RFC3339格式", "instruction"), ("The staging cluster is called kestrel", "episodic"),
           ("每篇文章都要配一张封面图", "instruction"), ("用户喜欢暗色主题", "user"), ("用户现在喜欢亮色主题", "user")]
    for n, (text, wing) in enumerate(seq):
        remember(store, [Candidate(text, wing=wing)], now=1000 + n // 3)  # several writes share a second
    before = {m.id: m.to_json() for m in store.list(profile=None, include_hidden=True)}
    report = compact(store)
    assert report.merges == [] and report.scanned == len(store.list(profile=None))
    assert {m.id: m.to_json() for m in store.list(profile=None, include_hidden=True)} == before


def test_pairs_merge_only_where_the_write_path_could_see_both(store):
    # user wing: private to each profile, so the same fact in two profiles is two memories.
    pa, pb = raced(store, ("用户喜欢暗色主题", "user", "alice", 1000), ("用户喜欢暗色主题", "user", "bob", 1000))
    # instruction wing is shared: a near-copy from another profile raced in.
    ia, ib = raced(store, ("博客文章的日期必须是RFC3339格式", "instruction", "alice", 1000),
                   ("博客文章日期必须用RFC3339格式", "instruction", "bob", 1001))
    # the same text in different wings is not a pair either
    w1, w2 = raced(store, ("The staging cluster is called kestrel", "episodic", "alice", 1000),
                   ("The staging cluster is called kestrel", "user", "alice", 1000))
    report = compact(store)
    assert [(m.kept, m.superseded) for m in report.merges] == [(ia, ib)]
    assert {i: s[0] for i, s in state(store, [pa, pb, w1, w2]).items()} == {i: "active" for i in (pa, pb, w1, w2)}


def test_forgotten_and_superseded_memories_are_left_alone(store):
    a, b = raced(store, ("I use vim, not nano", "user", "default", 1000),
                 ("I use vim and not nano", "user", "default", 1001))
    store.forget([a])
    report = compact(store)
    assert report.merges == []  # the surviving copy has no active partner
    assert state(store, [a, b]) == {b: ("active", "")}  # the forgotten one is gone (a tombstone stays)
    assert [t["id"] for t in store.tombstones()] == [a]


def test_dry_run_changes_nothing_and_a_second_run_merges_nothing(store):
    ids = raced(store, ("项目统一用Python 3.11", "instruction", "default", 1000),
                ("项目统一使用 Python 3.11", "instruction", "default", 1001),
                ("用户每天喝两杯咖啡", "user", "default", 1002), ("用户现在每天喝三杯咖啡", "user", "default", 1003))
    before = state(store, ids)
    dry = compact(store, dry_run=True)
    assert state(store, ids) == before and len(dry.merges) == 2 and dry.dry_run
    real = compact(store)
    assert [(m.action, m.kept, m.superseded) for m in real.merges] == \
        [(m.action, m.kept, m.superseded) for m in dry.merges]
    assert compact(store).merges == []
    assert {s[0] for s in state(store, ids).values()} == {"active", "superseded"}


def test_cli_compact_prints_each_merge_and_a_summary(capsys, store, root):
    raced(store, ("I use vim, not nano", "user", "default", 1000), ("I use vim and not nano", "user", "default", 1001))
    store.close()
    code = main(["compact", "--dry-run", "--json", "--hermes-home", str(root)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and lines[0]["merge"]["action"] == "duplicate" and lines[0]["dry_run"] is True
    assert lines[-1]["summary"]["merged"] == 1 and lines[-1]["summary"]["dry_run"] is True
    code = main(["compact", "--hermes-home", str(root)])
    out = capsys.readouterr().out
    assert code == 0 and "superseded" in out and "1 merged (1 duplicates, 0 updates)" in out
    main(["compact", "--hermes-home", str(root)])
    assert "0 merged" in capsys.readouterr().out


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from automem.paths import Location
    from automem.core.store import Store
    s = Store(Location.resolve({root!r}))
    with s.lock():
        print("LOCKED", flush=True)
        time.sleep(1.5)
        print(f"RELEASED {{time.time()}}", flush=True)
""")


@pytest.mark.embedded_only("the write lock is the embedded store's")
def test_compact_waits_for_the_write_lock(store, root):
    import os

    raced(store, ("I use vim, not nano", "user", "default", 1000), ("I use vim and not nano", "user", "default", 1001))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(repo=repo, root=str(root))],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "LOCKED"
    report = compact(store)
    finished = time.time()
    released = float(holder.stdout.readline().split()[1])
    holder.wait(timeout=30)
    assert len(report.merges) == 1 and finished >= released


def test_compact_never_merges_across_people(store):
    """Two people restating one fact are two memories: compact replays the write path, which never compares them."""
    mems = [Memory(id=memory_id("default", "user", "I am allergic to peanuts", scope), text="I am allergic to peanuts",
                   wing="user", profile="default", scope=scope, room="auto-extract", created_at=t, updated_at=t)
            for scope, t in (("user:telegram:1001", 1000), ("user:telegram:1002", 1001), ("", 1002))]
    for m in mems:
        store.write_records([m], store.embed([m.text]))
    report = compact(store, now=2000)
    assert report.merges == []
    assert {m.status for m in store.get([m.id for m in mems])} == {"active"}
