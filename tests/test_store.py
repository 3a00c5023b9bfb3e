"""The store: layout on disk, ids, metadata, visibility, and what a second process sees."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from automem.config import Config
from automem.core.memory import Memory, memory_id
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.paths import Location, resolve_root_and_profile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_root_and_profile_follow_hermes_home(tmp_path, monkeypatch):
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_root_and_profile() == (tmp_path / ".hermes", "default")
    assert resolve_root_and_profile(tmp_path / "h" / "profiles" / "blog-writer") == (tmp_path / "h", "blog-writer")
    assert resolve_root_and_profile(tmp_path / "h") == (tmp_path / "h", "default")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "x" / "profiles" / "editor"))
    loc = Location.resolve()
    assert (loc.root, loc.profile) == (tmp_path / "x", "editor")
    assert loc.profile_home == tmp_path / "x" / "profiles" / "editor"
    assert Location.resolve(profile="other").profile == "other"


@pytest.mark.embedded_only("the folders hold the embedded Chroma files")
def test_folders_are_private_and_where_the_design_says(store, location):
    remember(store, [Candidate("I use vim, not nano", wing="user")])
    for d in (location.automem_dir, location.chroma_dir, location.spool_dir, location.dead_dir, location.logs_dir):
        assert d.is_dir(), d
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert location.chroma_dir == location.root / "automem" / "chroma"
    assert location.write_lock == location.root / "automem" / "write.lock"


def test_collection_is_cosine_with_our_embedding_function(store):
    col = store.collection
    assert col.name == "memories"
    conf = col.configuration_json
    assert conf["hnsw"]["space"] == "cosine"
    assert conf["embedding_function"]["name"] == "automem-usem3"


def test_a_memory_carries_every_metadata_field(store):
    [d] = remember(store, [Candidate("项目统一用Python 3.11", wing="instruction", profile="default",
                                     room="auto-extract", added_by="auto-extract", session_id="s1", job="j1")],
                   now=1700000000)
    assert d.action == "new"
    assert d.id == memory_id("default", "instruction", "项目统一用Python 3.11")
    [m] = store.get([d.id])
    meta = m.metadata()
    assert set(meta) == {"wing", "category", "room", "profile", "scope", "added_by", "session_id", "task_id",
                         "created_at", "updated_at", "status", "superseded_by", "job", "pinned", "restated",
                         "audience", "changed_at"}  # `replaces` only on an update
    assert meta["category"] == "instruction" and meta["status"] == "active" and meta["scope"] == ""
    assert abs(meta["changed_at"] - time.time() * 1000) < 60_000  # the write's clock, in milliseconds
    assert meta["created_at"] == meta["updated_at"] == 1700000000
    assert (meta["session_id"], meta["job"], meta["room"]) == ("s1", "j1", "auto-extract")


def test_ids_are_deterministic_so_a_rerun_adds_nothing(store):
    cands = [Candidate("I use vim, not nano", wing="user"),
             Candidate("Deploy only after hugo --minify", wing="instruction")]
    first = remember(store, cands)
    second = remember(store, cands)
    assert [d.action for d in first] == ["new", "new"]
    assert [d.action for d in second] == ["duplicate", "duplicate"]
    assert [d.id for d in second] == [d.id for d in first]
    assert store.count() == 2


def test_visibility_own_memories_plus_shared_instruction_wing(store):
    remember(store, [Candidate("用户喜欢暗色模式", wing="user", profile="blog-writer"),
                     Candidate("日期必须是RFC3339格式", wing="instruction", profile="blog-writer")])
    seen_by_editor = {m.text for m in store.list(profile="editor")}
    seen_by_writer = {m.text for m in store.list(profile="blog-writer")}
    assert seen_by_editor == {"日期必须是RFC3339格式"}
    assert seen_by_writer == {"用户喜欢暗色模式", "日期必须是RFC3339格式"}
    hits = store.search("什么颜色主题", k=5, profile="editor")
    assert all(m.profile == "blog-writer" and m.wing == "instruction" for m, _ in hits)


def test_shared_wings_are_configurable(location):
    cfg = Config(shared_wings=["instruction", "user"])
    s = Store(location, cfg)
    remember(s, [Candidate("用户喜欢暗色模式", wing="user", profile="a")])
    assert [m.text for m in s.list(profile="b")] == ["用户喜欢暗色模式"]
    s.close()
    s2 = Store(location, Config(shared_wings=[]))
    remember(s2, [Candidate("Always write RFC3339 dates", wing="instruction", profile="a")])
    assert s2.list(profile="b") == []
    s2.close()


def test_forgotten_and_superseded_are_never_recalled_superseded_listed_with_all(store):
    [old] = remember(store, [Candidate("项目用Python 3.11", wing="instruction")])
    [upd] = remember(store, [Candidate("项目改用Python 3.12", wing="instruction")])
    assert upd.action == "update" and upd.matched_id == old.id
    [gone] = remember(store, [Candidate("I use vim, not nano", wing="user")])
    assert store.forget([gone.id]) == [gone.id]
    assert store.forget([gone.id]) == []  # idempotent
    visible = {m.id for m in store.list(profile="default")}
    assert visible == {upd.id}
    hits = {m.id for m, _ in store.search("Python version", k=10, profile="default")}
    assert old.id not in hits and gone.id not in hits
    every = {m.id: m for m in store.list(profile="default", include_hidden=True)}
    assert every[old.id].status == "superseded" and every[old.id].superseded_by == upd.id
    assert gone.id not in every and store.get([gone.id]) == []  # forgotten: deleted, words and vector
    [tomb] = store.tombstones()
    assert tomb["id"] == gone.id and tomb["profile"] == "default" and tomb["wing"] == "user"
    assert "I use vim" not in str(tomb) and len(tomb["text_sha"]) == 32


def test_an_automatic_source_does_not_bring_back_a_forgotten_memory(store):
    [d] = remember(store, [Candidate("I use vim, not nano", wing="user")])
    store.forget([d.id])
    for room in ("auto-extract", "builtin-mirror", "kanban"):
        [again] = remember(store, [Candidate("I use vim, not nano", wing="user", room=room)])
        assert again.action == "rejected" and "forgot" in again.reason, room
    # the same words in another wing of the same profile are the same forgotten fact
    [other_wing] = remember(store, [Candidate("I use vim, not nano", wing="instruction", room="auto-extract")])
    assert other_wing.action == "rejected"
    # another profile's memory of the same words is not this user's forget
    [theirs] = remember(store, [Candidate("I use vim, not nano", wing="user", profile="editor", room="auto-extract")])
    assert theirs.action == "new"
    [explicit] = remember(store, [Candidate("I use vim, not nano", wing="user", room="cli")])
    assert explicit.action == "new" and store.get([d.id])[0].status == "active"
    assert store.tombstones() == []  # restored: the tombstone is gone
    [auto] = remember(store, [Candidate("I use vim, not nano", wing="user", room="auto-extract")])
    assert auto.action == "duplicate"


def test_the_write_path_rejects_bad_input_with_a_reason(store):
    cands = [Candidate("hi", wing="user"), Candidate("x" * 201, wing="user"),
             Candidate("my key is sk-abcdefghijklmnopqrstuvwx", wing="user"),
             Candidate("my password is hunter22", wing="user"), Candidate("我的密码是abc123456", wing="user"),
             Candidate("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", wing="user"),
             Candidate("Authorization: Bearer abcdefghijklmnop1234", wing="user"),
             Candidate(12345, wing="user"), Candidate("a valid memory text", wing="nope")]  # type: ignore[arg-type]
    decisions = remember(store, cands)
    assert [d.action for d in decisions] == ["rejected"] * len(cands)
    reasons = [d.reason for d in decisions]
    assert "too short" in reasons[0] and "too long" in reasons[1]
    assert all("secret" in r for r in reasons[2:7]), reasons
    assert "not a string" in reasons[7] and "wing" in reasons[8]
    assert store.count() == 0


def test_normalisation_folds_full_width_and_whitespace(store):
    [a] = remember(store, [Candidate("项目用Ｐｙｔｈｏｎ　３．１１  版本", wing="instruction")])
    assert a.text == "项目用Python 3.11 版本"
    [b] = remember(store, [Candidate("项目用Python 3.11 版本", wing="instruction")])
    assert b.action == "duplicate" and b.id == a.id


def test_a_batch_sees_its_own_earlier_candidates(store):
    decisions = remember(store, [Candidate("项目用Python 3.11", wing="instruction"),
                                 Candidate("项目用Python 3.11", wing="instruction"),
                                 Candidate("项目改用Python 3.12", wing="instruction")])
    assert [d.action for d in decisions] == ["new", "duplicate", "update"]
    assert [m.text for m in store.list(profile="default")] == ["项目改用Python 3.12"]


SECOND_PROCESS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    from automem.paths import Location
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    s = Store(Location.resolve({root!r}))
    hits = s.search({query!r}, k=3, profile="default")
    print("SEEN:" + "|".join(m.text for m, _ in hits))
    print("DECISION:" + remember(s, [Candidate({text!r}, wing="user")])[0].action)
""")


def _run_second_process(root, query, text):
    code = SECOND_PROCESS.format(repo=REPO, root=str(root), query=query, text=text)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(":", 1) for line in out.stdout.splitlines() if ":" in line)
    return lines["SEEN"], lines["DECISION"]


def test_each_process_sees_the_others_writes_in_vector_search(store, root):
    # This process opens the store first and keeps its client: the case Chroma's per-process cache gets wrong.
    remember(store, [Candidate("I use vim, not nano", wing="user")])
    assert store.search("text editor", k=1, profile="default")
    seen, decision = _run_second_process(root, "which editor", "用户每天喝两杯咖啡")
    assert "I use vim, not nano" in seen and decision == "new"
    hits = [m.text for m, _ in store.search("用户每天喝几杯咖啡", k=1, profile="default")]
    assert hits == ["用户每天喝两杯咖啡"]
    # ...and this process's write path decides against it: the same fact is a duplicate, a new number an update.
    assert remember(store, [Candidate("用户每天喝两杯咖啡", wing="user")])[0].action == "duplicate"
    [upd] = remember(store, [Candidate("用户现在每天喝三杯咖啡", wing="user")])
    assert upd.action == "update"
    seen, decision = _run_second_process(root, "咖啡", "用户现在每天喝三杯咖啡")
    assert "用户现在每天喝三杯咖啡" in seen and "用户每天喝两杯咖啡" not in seen
    assert decision == "duplicate"


def test_import_keeps_ids_and_metadata(store):
    mem = Memory(id="m_custom", text="Imported memory text", wing="episodic", profile="p1", room="import",
                 created_at=5, updated_at=6, status="superseded", superseded_by="m_other", job="j",
                 extra={"source": "mem0"})
    store.import_memories([mem])
    [back] = store.get(["m_custom"])
    assert back.to_json() == mem.to_json()


def test_search_within_a_small_share_of_the_store_is_the_filtered_query_and_reads_no_other_records(store):
    # 30 of 330 memories are visible to "rare": the nearest unfiltered neighbours hold too few of them, so search
    # widens its unfiltered query (visibility from the recall index) instead of Chroma's filtered query, whose cost
    # follows how many memories the filter matches. The answer must be exactly the filtered query's.
    topics = ["coffee", "vim", "deploy", "Chengdu", "piano", "billing", "咖啡", "编辑器", "部署", "成都", "钢琴"]
    mems = []
    for i in range(330):
        profile = "rare" if i % 11 == 0 else "common"
        text = f"Memory {i} about {topics[i % len(topics)]} and {topics[(i * 7) % len(topics)]}, number {i * 31 % 997}"
        mems.append(Memory(id=memory_id(profile, "episodic", text), text=text, wing="episodic", profile=profile,
                           room="import", created_at=i, updated_at=i))
    store.import_memories(mems)
    store.ensure_index()
    flt = store.where("rare")
    embedding = store.embed(["Where did I drink coffee in Chengdu?"])[0]
    res = store.collection.query(query_embeddings=[embedding], n_results=12, where=flt,
                                 include=["distances"])
    got = store.search(embedding=embedding, k=12, profile="rare")
    assert [m.id for m, _ in got] == res["ids"][0]
    assert [round(d, 5) for _, d in got] == [round(d, 5) for d in res["distances"][0]]
    assert all(m.profile == "rare" for m, _ in got)
    if store.backend == "embedded":
        assert store._nearest_by_index(embedding, 12, flt) == got  # the index path answered, not the metadata one


def test_search_where_few_pass_the_filter_reads_those_few_and_no_nearest_neighbour_query(store, monkeypatch):
    """One profile's instructions, a stranger's own memories: when no more memories pass the filter than a first
    query would read, the index names them and their vectors are read; the answer is the filtered query's, and
    nothing widens a query over the whole store (35 ms at 10,000 memories, 1 ms this way)."""
    mems = [Memory(id=memory_id(p, "user", t), text=t, wing="user", profile=p, room="import", created_at=i,
                   updated_at=i)
            for i, (p, t) in enumerate([("busy", f"The user noted fact number {i} about gardening") for i in range(80)]
                                       + [("quiet", "The user lives in Porto"), ("quiet", "The user likes green tea"),
                                          ("quiet", "用户在杭州工作")])]
    store.import_memories(mems)
    store.ensure_index()
    embedding = store.embed(["Where does the user live?"])[0]
    flt = store.where("quiet")
    res = store.collection.query(query_embeddings=[embedding], n_results=2, where=flt, include=["distances"])
    if store.backend == "embedded":
        queries = []
        real = store._query
        monkeypatch.setattr(store, "_query", lambda *a, **k: queries.append(a) or real(*a, **k))
    got = store.search(embedding=embedding, k=2, profile="quiet")
    assert [m.id for m, _ in got] == res["ids"][0]
    assert [round(d, 5) for _, d in got] == [round(d, 5) for d in res["distances"][0]]
    assert store.search(embedding=embedding, k=2, profile="nobody") == []
    if store.backend == "embedded":
        assert queries == []
        monkeypatch.undo()


def test_a_search_filtered_on_several_fields_in_one_clause_is_answered_by_chromas_filtered_query(store):
    """The write path filters on the room and the profile in one `where` ({"room": ..., "profile": ...}); Chroma
    takes one field per clause, so its filtered query (the last resort: a server, or a stale index) must get them
    apart, or the write fails."""
    from automem.core import index

    texts = [("busy", f"The user lives in the city with postcode {i}") for i in range(80)] + [
        ("quiet", "绿茶"), ("quiet", "乌龙茶")]  # far from the query: not among the nearest unfiltered ones
    store.import_memories([Memory(id=memory_id(p, "user", t), text=t, wing="user", profile=p, room="import",
                                  created_at=i, updated_at=i) for i, (p, t) in enumerate(texts)])
    index.mark_stale(store.location)  # no index path: the unfiltered pool, then the filtered query
    embedding = store.embed(["Where does the user live?"])[0]
    got = store.search(embedding=embedding, k=2, wing="user", where={"room": {"$nin": ["kanban"]}, "profile": "quiet"})
    assert {m.text for m, _ in got} == {"绿茶", "乌龙茶"}


def test_the_next_unfiltered_pool_follows_the_visible_share_and_gives_way_to_the_filtered_query():
    from automem.core.searching import WIDE_POOL, next_pool

    assert next_pool(160, 40, 32, reads_metadata=True) == 400  # a fifth visible: twice what that suggests
    assert next_pool(160, 40, 32, reads_metadata=False) == 400
    assert next_pool(160, 40, 0, reads_metadata=True) is None  # nothing seen: reading metadata wider is not worth it
    assert next_pool(160, 40, 0, reads_metadata=False) == WIDE_POOL  # ids only are cheap: look as far as allowed
    assert next_pool(160, 40, 4, reads_metadata=True) is None  # it would ask for 3,200
    assert next_pool(160, 40, 4, reads_metadata=False) == WIDE_POOL
    assert next_pool(WIDE_POOL, 40, 30, reads_metadata=False) is None
