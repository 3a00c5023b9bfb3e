"""Server mode with several machines (issue 32), on a real `chroma run` on 127.0.0.1: two roots (two machines, each
with its own write lock and recall index) on one server database.

- each machine's recall index follows the server by change (`automem.core.sync`);
- a forget reaches the other machine's system block, index file and files within one sync;
- racing changes converge: one current value, both in the history; a pin survives a racing restatement;
- a stopped or hung server (SIGSTOP) costs a session at most `server_wait_s`: the block comes from the local index.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from automem.config import load_config
from automem.core import index, sync
from automem.core.curation import set_pinned
from automem.core.recall import prefetch_block, system_prompt_block
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.ops.compact import RACED, compact
from automem.paths import Location

pytestmark = pytest.mark.server


def machine(tmp_path: Path, name: str, url: str, db: str, **extra) -> Location:
    """A Hermes root standing for one machine of the team: its own config, lock, index and log."""
    root = tmp_path / name
    root.mkdir()
    settings = {"chroma_url": url, "chroma_database": db, "server_sync_s": 0.2, **extra}
    lines = "".join(f"  {k}: {v}\n" for k, v in settings.items())
    (root / "config.yaml").write_text(f"automem:\n{lines}", encoding="utf-8")
    return Location(root, "default")


@pytest.fixture
def two(tmp_path, chroma_server):
    db = chroma_server.new_database()
    a = machine(tmp_path, "machine-a", chroma_server.url, db)
    b = machine(tmp_path, "machine-b", chroma_server.url, db)
    stores = [Store(a), Store(b)]
    yield stores
    for s in stores:
        s.close()


def block_of(store: Store) -> str:
    return system_prompt_block(store.location, store.config)[0]


def active(store: Store, texts) -> dict[str, str]:
    every = {m.text: m for m in store.list(profile="default", include_hidden=True)}
    return {t: every[t].status for t in texts if t in every}


# -- incremental sync ------------------------------------------------------------------------------------------
def test_a_sync_reads_what_changed_and_the_index_follows_every_kind_of_change(two):
    a, b = two
    facts = [f"用户的第{i}号项目叫做代号{i}星" for i in range(30)]
    remember(a, [Candidate(t, wing="user") for t in facts])
    [old] = remember(a, [Candidate("项目数据库用PostgreSQL 14", wing="instruction")])
    [pinme] = remember(a, [Candidate("I use vim, not nano", wing="user")])
    b.config.server_sync_margin_s = 0.0  # one clock here: no margin, so what is read again is only what changed
    first = sync.sync(b.location, b.config, force=True)
    assert first.full and first.read == 32
    assert len(index.items(b.location)) == 32

    # Machine A: one new, one update (supersedes), one pin, one restatement, one forget.
    [new] = remember(a, [Candidate("用户每天早上跑步五公里", wing="user")])
    [upd] = remember(a, [Candidate("项目数据库升级到PostgreSQL 15", wing="instruction")])
    assert upd.action == "update" and upd.matched_id == old.id
    set_pinned(a, [pinme.id], "default", "", True)
    [dup] = remember(a, [Candidate(facts[3], wing="user")])
    assert dup.action == "duplicate"
    gone = remember(a, [Candidate(facts[7], wing="user")])[0].id
    a.forget([gone])

    report = sync.sync(b.location, b.config, force=True)
    assert not report.full
    assert report.read <= 6 and report.tombstones == 1  # what changed, not the 32 memories
    items = {i.id: i for i in index.items(b.location)}
    assert new.id in items and upd.id in items
    assert old.id not in items and gone not in items
    assert items[pinme.id].pinned == 1
    restated = [i for i in items.values() if i.text == facts[3]]
    assert restated and restated[0].restated == 1
    assert set(items) == {m.id for m in a.list(profile="default")}
    # The system block of machine B shows the pinned memory first and the new value, not the old one.
    block = block_of(b)
    assert block.index("I use vim, not nano") < block.index("用户")
    assert "PostgreSQL 15" in block and "PostgreSQL 14" not in block
    sync.sync(b.location, b.config, force=True)  # the margin reads the last changes again: that changes nothing
    assert {i.id: (i.pinned, i.restated) for i in index.items(b.location)} == \
        {i.id: (i.pinned, i.restated) for i in items.values()}


def test_an_index_from_before_the_change_stamps_is_rebuilt_once(two):
    a, b = two
    remember(a, [Candidate("用户住在上海浦东", wing="user")])
    # A record an older automem wrote: no `changed_at` (Chroma deletes a key set to None).
    a.collection.update(ids=[m.id for m in a.list(profile="default")], metadatas=[{"changed_at": None}])
    assert "changed_at" not in a.collection.get()["metadatas"][0]
    index.rebuild(b.location, [], "server", meta={})  # the layout is current, but it never synced
    first = sync.sync(b.location, b.config, force=True)
    assert first.full and [i.text for i in index.items(b.location)] == ["用户住在上海浦东"]
    assert not sync.sync(b.location, b.config, force=True).full


def test_a_coverage_gap_is_found_and_filled(two):
    a, b = two
    remember(a, [Candidate("用户住在上海浦东", wing="user")])
    sync.sync(b.location, b.config, force=True)
    # A record the stamps cannot show (written with an old clock, beyond the margin).
    [m] = remember(a, [Candidate("用户养了一只猫叫雪球", wing="user")])
    a.collection.update(ids=[m.id], metadatas=[{"changed_at": 1000}])
    index.note_meta(b.location, {"reconciled_at": "0"})
    report = sync.sync(b.location, b.config, force=True, reconcile=True)
    assert report.gap == 1 and report.reconciled
    assert m.id in {i.id for i in index.items(b.location)}


# -- forget reaches every machine -----------------------------------------------------------------------------
def test_forget_reaches_the_other_machines_block_index_and_files_within_one_sync(two):
    a, b = two
    words = "用户的保险柜放在书房的油画后面"
    [d] = remember(a, [Candidate(words, wing="user")])
    assert words in block_of(b)  # machine B's first block builds its index
    # Machine B holds the words elsewhere too: a queued extraction job of its own.
    job = b.location.spool_dir / "j_test.json"
    b.location.spool_dir.mkdir(parents=True, exist_ok=True)
    job.write_text(json.dumps({"id": "j_test", "profile": "default", "transcript": [["user", words]]},
                              ensure_ascii=False), encoding="utf-8")
    assert a.forget([d.id]) == [d.id]
    time.sleep(0.3)  # older than server_sync_s: the next session start syncs
    assert words not in block_of(b)  # one sync
    raw = index.index_path(b.location).read_bytes()
    assert words.encode("utf-8") not in raw and "保险柜".encode("utf-8") not in raw
    assert words not in job.read_text(encoding="utf-8")
    log = b.location.log_file.read_text(encoding="utf-8")
    assert '"index_sync"' in log and words not in log


# -- racing changes converge ------------------------------------------------------------------------------------
def race(stores, texts, *, barrier_at: str = "write_records") -> list:
    """Each store writes its text in a thread; both decide before either writes (the interleaving two machines
    without a shared lock can always produce, forced so the test does not depend on the scheduler)."""
    gate = threading.Barrier(len(stores), timeout=60)
    results: list = [None] * len(stores)
    errors: list = []
    for s in stores:
        real = getattr(Store, barrier_at)

        def held(*args, _real=real, _s=s, **kwargs):
            if not getattr(_s, "_raced", False):
                _s._raced = True
                gate.wait()
            return _real(_s, *args, **kwargs)

        setattr(s, barrier_at, held)

    def run(i: int) -> None:
        try:
            results[i] = remember(stores[i], [Candidate(texts[i], wing="instruction")])[0]
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for s in stores:
        delattr(s, barrier_at)
        s._raced = False
    assert not errors, errors
    return results


ROUNDS = [("项目数据库用PostgreSQL 14", "项目数据库升级到PostgreSQL 15", "项目数据库升级到PostgreSQL 16"),
          ("The team's database is PostgreSQL 14", "The team's database is now PostgreSQL 15",
           "The team's database is now PostgreSQL 16"),
          ("周报每周五下午交", "周报改成每周四下午交", "周报改成每周一上午交"),
          # Each new value updates the old one, but not each other: the two stayed current and `automem compact`
          # reported nothing to do (issue 32), in every round.
          ("部署服务器在东京机房", "部署服务器迁到新加坡机房", "部署服务器迁到法兰克福机房")]


@pytest.mark.parametrize("old,x,y", ROUNDS)
def test_two_machines_changing_one_fact_at_once_leave_one_current_value_both_in_history(two, old, x, y):
    a, b = two
    [o] = remember(a, [Candidate(old, wing="instruction")])
    da, db_ = race([a, b], [x, y])
    assert (da.action, db_.action) == ("update", "update") and da.matched_id == db_.matched_id == o.id
    every = {m.id: m for m in a.list(profile="default", include_hidden=True)}
    current = [m for m in every.values() if m.status == "active"]
    assert [m.text for m in current] in ([x], [y])  # exactly one current value
    win = current[0]
    lose = every[da.id if win.id == db_.id else db_.id]
    assert lose.status == "superseded" and lose.superseded_by == win.id  # both in the history
    assert every[o.id].status == "superseded" and every[o.id].superseded_by in (da.id, db_.id)
    assert (win.created_at, win.id) > (lose.created_at, lose.id)  # the later change wins
    for s in (a, b):
        sync.sync(s.location, s.config, force=True)
        shown = [i.text for i in index.items(s.location)]
        assert win.text in shown and lose.text not in shown and old not in shown
    assert compact(a).merges == []


def test_a_race_its_writers_did_not_settle_shows_one_value_and_compact_settles_it(two, monkeypatch):
    from automem.core import write_path

    a, b = two
    old, x, y = ROUNDS[-1]
    [o] = remember(a, [Candidate(old, wing="instruction")])
    monkeypatch.setattr(write_path, "_converge", lambda *args, **kwargs: None)  # writers that do not look
    da, db_ = race([a, b], [x, y])
    assert sorted(active(a, [x, y]).values()) == ["active", "active"]  # the race the issue found
    # At read time: each machine's index and recall show the later change only.
    rivals = {m.id: m for m in a.get([da.id, db_.id])}
    win = max(rivals.values(), key=lambda m: (m.created_at, m.id))
    for s in (a, b):
        sync.sync(s.location, s.config, force=True)
        shown = [i.text for i in index.items(s.location)]
        assert shown.count(win.text) == 1 and (set([x, y]) - {win.text}).isdisjoint(shown)
        hits = [m.text for m, _ in s.recall("部署服务器在哪个机房", k=5, profile="default")]
        assert win.text in hits and not (set([x, y]) - {win.text}) & set(hits)
    # compact settles it in the store, by the same rule.
    report = compact(b)
    assert [(m.kept, m.superseded, m.reason) for m in report.merges] == \
        [(win.id, (set(rivals) - {win.id}).pop(), RACED.format(o.id))]
    assert sorted(active(a, [x, y]).values()) == ["active", "superseded"]
    assert compact(a).merges == []


def test_compact_settles_a_race_between_writers_older_than_the_replaces_key(two, monkeypatch):
    from automem.core import write_path
    from automem.ops.compact import load_records

    a, b = two
    old, x, y = ROUNDS[-1]  # neither new value updates the other: compact found nothing to do before
    [o] = remember(a, [Candidate(old, wing="instruction")])
    monkeypatch.setattr(write_path, "_converge", lambda *args, **kwargs: None)
    da, db_ = race([a, b], [x, y])
    # Writers from before `replaces`: nothing names what they replaced; the replaced memory names the one written
    # later (the last of the two writes to it), which did not see the other.
    later = max((r for r in load_records(a)[0] if r.memory.id in (da.id, db_.id)), key=lambda r: r.pos).memory.id
    a.collection.update(ids=[da.id, db_.id, o.id], metadatas=[{"replaces": None}, {"replaces": None},
                                                              {"superseded_by": later}])
    assert sorted(active(a, [x, y]).values()) == ["active", "active"]
    report = compact(a)
    assert len(report.merges) == 1 and report.merges[0].reason == RACED.format(o.id)
    assert sorted(active(a, [x, y]).values()) == ["active", "superseded"]
    assert compact(b).merges == []


def test_a_pin_survives_a_restatement_written_at_the_same_moment(two):
    a, b = two
    text = "用户习惯用vim编辑器"
    [d] = remember(a, [Candidate(text, wing="user")])
    real = Store.update_metadata

    def restate_after_the_pin(memories):
        # Machine B read the memory (unpinned) to restate it; machine A pins it before B writes.
        set_pinned(a, [d.id], "default", "", True)
        return real(b, memories)

    b.update_metadata = restate_after_the_pin
    [again] = remember(b, [Candidate(text, wing="user", session_id="later")])
    del b.update_metadata
    assert again.action == "duplicate"
    [m] = a.get([d.id])
    assert m.pinned == 1 and m.restated == 1
    # ...and the other way round: an unpin from a stale copy does not undo a restatement.
    stale = a.get([d.id])[0]
    remember(b, [Candidate(text, wing="user", session_id="third")])
    stale.pinned = 0
    a.update_metadata([stale])
    [m] = a.get([d.id])
    assert m.pinned == 0 and m.restated == 2


# -- a server that does not answer ------------------------------------------------------------------------------
def _timed(call):
    t = time.monotonic()
    out = call()
    return out, time.monotonic() - t


def test_a_stopped_or_hung_server_costs_a_session_at_most_the_budget(tmp_path):
    from automem.hermes.status import status_config
    from tests.support.chroma_server import ChromaServer, create_database

    server = ChromaServer(tmp_path / "server").start()
    try:
        db = create_database(server.url)
        loc = machine(tmp_path, "machine", server.url, db, chroma_timeout=5, server_wait_s=0.5)
        cfg = load_config(loc)
        store = Store(loc, cfg)
        remember(store, [Candidate("用户习惯用vim编辑器", wing="user"),
                         Candidate("项目统一用Python 3.11", wing="instruction")])
        warm = store.recall("编辑器", k=2, profile="default")  # a long-lived session's warm store
        assert warm
        index.note_meta(loc, {"synced_at": str(time.time() - 3600)})  # an hour old: a session wants a sync
        port = server.port

        def session_start():
            block, took = _timed(lambda: system_prompt_block(loc, cfg)[0])
            assert "用户习惯用vim编辑器" in block and took < cfg.server_wait_s + 1.5, took
            text, took = _timed(lambda: prefetch_block(loc, cfg, "我用什么编辑器")[0])
            assert "vim" in text and took < cfg.server_wait_s + 1.5, took
            text, took = _timed(lambda: prefetch_block(loc, cfg, "我用什么编辑器", store=store)[0])
            assert "vim" in text and took < cfg.server_wait_s + 1.5, took

        server.stop()  # down
        session_start()
        time.sleep(0.5)
        status = status_config(str(loc.root))["server sync"]
        assert "has not answered" in status and "sessions answer from the local index" in status, status

        server = ChromaServer(tmp_path / "server", port=port).start()  # back, on the same data
        index.note_meta(loc, {"synced_at": str(time.time() - 3600)})
        pgid = os.getpgid(server.proc.pid)
        os.killpg(pgid, signal.SIGSTOP)  # hung: accepts connections, answers nothing
        try:
            session_start()
        finally:
            os.killpg(pgid, signal.SIGCONT)
        log = [json.loads(line) for line in loc.log_file.read_text(encoding="utf-8").splitlines()]
        stale = [r for r in log if r["event"] == "index_stale"]
        assert stale and all(r["age_s"] >= 3600 for r in stale)
        assert any(r["event"] == "recall_from_index" for r in log)
        time.sleep(cfg.chroma_timeout + 0.5)  # the hung requests time out; the next start syncs again
        sync.sync(loc, cfg, force=True)
        assert "has not answered" not in status_config(str(loc.root))["server sync"]
        store.close()
    finally:
        server.cleanup()
