"""The recall index notices what it does not cover and repairs itself; `automem doctor` checks the index, the
values stored, the resident's socket folder and its health, each with a fix.

(The gap was seen once in seven runs of writers SIGKILLed during concurrent imports: 256 memories in Chroma, not in
the index, the index marked fresh. scripts/stress_index.py drives that; here the gap is made deterministically.)
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest

from automem.cli import main
from automem.config import Config
from automem.core import index, resident, resident_client
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.paths import Location

WORDS = ["amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel",
         "lumen"]
FACTS = [f"The {w} server of project {i} is rebooted every {i + 2} days" for i, w in enumerate(WORDS)]


def seeded(location: Location) -> list[str]:
    store = Store(location, Config())
    try:
        decisions = remember(store, [Candidate(t, wing="episodic") for t in FACTS])
        remember(store, [Candidate("项目统一用Python 3.11", wing="instruction")])
        [update] = remember(store, [Candidate("项目改用Python 3.12", wing="instruction")])
        assert update.action == "update"
        assert store.ensure_index() is False  # current
        return [d.id for d in decisions]
    finally:
        store.close()


def drop_rows_behind_the_index(location: Location, ids: list[str]) -> None:
    conn = sqlite3.connect(str(index.index_path(location)))
    with conn:
        for mid in ids:
            (rowid,) = conn.execute("SELECT rowid FROM memories WHERE id = ?", (mid,)).fetchone()
            conn.execute("DELETE FROM words WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
    conn.close()


@pytest.mark.embedded_only("the generation stamp and Chroma's count on disk")
def test_rows_lost_behind_the_index_are_noticed_by_the_next_process_and_rebuilt(location):
    ids = seeded(location)
    drop_rows_behind_the_index(location, ids[:4])
    assert index.is_fresh(location, Store(location, Config()).generation())  # it still calls itself current
    store = Store(location, Config())
    try:
        hits = store.recall("which server of project 2 is rebooted every 4 days", k=3)
        assert ids[2] in [m.id for m, _ in hits]
        assert {i.id for i in index.items(location)} >= set(ids)
        assert store.index_gap() is None
    finally:
        store.close()
    from automem.log import read_events

    [gap] = read_events(location, "index_gap")
    assert gap["stored"] - gap["indexed"] == 4


@pytest.mark.embedded_only("the generation stamp and Chroma's count on disk")
def test_a_batch_chroma_holds_but_the_index_never_saw_is_found_by_a_fresh_reader_too(location):
    """The finding's shape: records in Chroma, not in the index, the index stamped current. A fresh process that
    opens the store marks it stale; even the start path, which reads the index alone, then sees the batch."""
    from automem.core.recall import system_prompt_block

    seeded(location)
    store = Store(location, Config())
    texts = [f"The user's locker number {n} is in hall {n % 3}" for n in range(5)]
    meta = {"wing": "user", "category": "persona", "room": "import", "profile": "default", "scope": "",
            "added_by": "import", "session_id": "", "task_id": "", "created_at": 1700000000,
            "updated_at": 1700000000 + 10 ** 6, "status": "active", "superseded_by": "", "job": "", "pinned": 0,
            "restated": 0}
    store.collection.add(ids=[f"m_{'9' * 20}{n:04d}" for n in range(5)], documents=texts,
                         metadatas=[dict(meta) for _ in texts], embeddings=store.embed(texts))
    store.close()  # no generation bump, no index row: exactly what a killed writer could leave
    assert index.is_fresh(location, store.generation())
    other = Store(location, Config())  # any process that opens the store (a drainer, the resident, the CLI)
    assert other.count() == 19
    other.close()
    block, ids = system_prompt_block(location, Config())  # the start path: no Store of its own
    assert any(i.startswith("m_" + "9" * 20) for i in ids), block


@pytest.mark.embedded_only("the generation stamp on disk")
def test_the_index_counts_the_records_it_does_not_index(location):
    seeded(location)
    store = Store(location, Config())
    try:
        rows, others = index.covered_ids(location)
        assert len(rows) + len(others) == store.count() and len(others) == 1  # the superseded Python 3.11
        assert store.index_gap() is None
    finally:
        store.close()


# The recall index as automem wrote it at 8f552d3 (INDEX_VERSION 5), before the columns changed_at, replaces and
# related_to, which this version's schema indexes.
OLDER_LAYOUT = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories(
    rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, text TEXT NOT NULL, wing TEXT NOT NULL,
    profile TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '', room TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'active', created_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0, restated INTEGER NOT NULL DEFAULT 0,
    task_id TEXT NOT NULL DEFAULT '', about_user INTEGER NOT NULL DEFAULT 0, audience TEXT NOT NULL DEFAULT '');
CREATE INDEX memories_by_wing ON memories(wing, profile, scope);
CREATE VIRTUAL TABLE words USING fts5(body, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE recalls(id TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0);
CREATE TABLE others(id TEXT PRIMARY KEY);
CREATE TABLE tally(profile TEXT NOT NULL, wing TEXT NOT NULL, scope TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active', n INTEGER NOT NULL, PRIMARY KEY(profile, wing, scope));
"""


@pytest.mark.embedded_only("an index file an older automem left on disk")
def test_a_store_whose_index_an_older_automem_wrote_takes_the_next_write_and_keeps_its_recall_counts(location):
    """An upgrade: the first process after it may well be a writer (`automem add`, a drainer). Each write raised
    sqlite3.OperationalError (no such column) after Chroma had stored it, until a reader rebuilt the index, and
    that reader's rebuild deleted the file, recall counts (kept only there) with it."""
    ids = seeded(location)
    generation = Store(location, Config()).generation()
    path = index.index_path(location)
    path.unlink()
    conn = sqlite3.connect(str(path))
    with conn:
        conn.executescript(OLDER_LAYOUT)
        conn.execute("INSERT INTO meta VALUES ('version', '5'), ('generation', ?)", (str(generation),))
        conn.execute("INSERT INTO recalls VALUES (?, 3)", (ids[0],))
    conn.close()
    store = Store(location, Config())
    try:
        [new] = remember(store, [Candidate("The user keeps two beehives on the roof", wing="user")])
        assert new.action == "new"
        assert new.id in [m.id for m, _ in store.recall("beehives on the roof", k=3)]
        assert ids[2] in [m.id for m, _ in store.recall("which server of project 2 is rebooted every 4 days", k=3)]
        assert store.index_gap() is None
    finally:
        store.close()
    conn = sqlite3.connect(str(path))
    assert conn.execute("SELECT n FROM recalls WHERE id = ?", (ids[0],)).fetchone() == (3,)
    conn.close()


def _doctor(capsys, root) -> dict:
    main(["doctor", "--json", "--hermes-home", str(root)])
    return {c["name"]: c for c in (json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{"))}


@pytest.mark.embedded_only("rows deleted in the index file")
def test_doctor_reports_an_index_gap_with_a_fix_that_repairs_it(capsys, root):
    location = Location(root, "default")
    ids = seeded(location)
    checks = _doctor(capsys, root)
    assert checks["recall index"]["status"] == "ok", checks["recall index"]
    drop_rows_behind_the_index(location, ids[:3])
    checks = _doctor(capsys, root)
    c = checks["recall index"]
    assert c["status"] == "fail" and "3" in c["detail"] and "automem repair" in c["fix"], c
    assert main(["repair", "--hermes-home", str(root)]) == 0
    capsys.readouterr()
    assert _doctor(capsys, root)["recall index"]["status"] == "ok"


def test_doctor_reports_impossible_numbers_a_store_already_holds_and_repair_clamps_them(capsys, root):
    location = Location(root, "default")
    seeded(location)
    store = Store(location, Config())
    mid = store.list(limit=1)[0].id
    store.collection.update(ids=[mid], metadatas=[{"created_at": 1e19, "restated": -4}])
    store.close()
    c = _doctor(capsys, root)["stored values"]
    assert c["status"] == "fail" and mid in c["detail"] and "created_at" in c["detail"], c
    assert "automem repair" in c["fix"]
    assert main(["repair", "--hermes-home", str(root)]) == 0
    capsys.readouterr()
    assert _doctor(capsys, root)["stored values"]["status"] == "ok"


def test_doctor_names_a_folder_where_the_residents_socket_goes(capsys, root, monkeypatch):
    """Before: a pre-created socket directory stopped the resident for ever, and doctor said all was well."""
    monkeypatch.delenv("AUTOMEM_RESIDENT", raising=False)
    location = Location(root, "default")
    seeded(location)
    blocker = resident_client.socket_path(location)
    blocker.mkdir()
    (blocker / "keep").write_text("x", encoding="utf-8")  # not empty: nobody may remove it silently
    checks = _doctor(capsys, root)
    c = checks["resident socket"]
    assert c["status"] == "fail" and str(blocker) in c["detail"] and str(blocker) in c["fix"], c
    (blocker / "keep").unlink()
    blocker.rmdir()
    assert _doctor(capsys, root)["resident socket"]["status"] == "ok"


def test_doctor_reports_why_the_resident_last_failed(capsys, root, monkeypatch):
    monkeypatch.delenv("AUTOMEM_RESIDENT", raising=False)
    location = Location(root, "default")
    seeded(location)
    from automem.log import log_event

    log_event(location, "resident_failed", error="IsADirectoryError: [Errno 21] Is a directory: 'x'")
    resident._hold_off_spawns(location)
    c = _doctor(capsys, root)["resident"]
    assert c["status"] == "fail" and "IsADirectoryError" in c["detail"] and c["fix"], c


def test_the_resident_removes_an_empty_folder_in_its_sockets_place_and_serves(location, monkeypatch):
    monkeypatch.delenv("AUTOMEM_RESIDENT", raising=False)
    seeded(location)
    resident_client.socket_path(location).mkdir()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(resident.serve(location, idle_s=3.0)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 90
    reply = None
    while reply is None and time.monotonic() < deadline and thread.is_alive():
        reply = resident_client.ask(location, {"op": "ping"}, timeout=2.0)
        time.sleep(0.1)
    thread.join(60)
    assert reply is not None and reply["ok"], codes
    assert codes == [0]


class _UpdateFails:
    """A Chroma collection whose metadata updates fail (a full disk, a server gone): everything else goes through."""

    def __init__(self, collection) -> None:
        self._collection = collection

    def update(self, **_kw):
        raise OSError("No space left on device")

    def __getattr__(self, name):
        return getattr(self._collection, name)


@pytest.mark.embedded_only("the generation stamp on disk")
def test_an_update_is_one_generation_and_a_half_failed_one_leaves_the_index_to_be_rebuilt(location):
    """An update writes twice (the new value added, the old one superseded) and moves the generation once, the index
    current. When the second half fails after the index took it, the index is not stamped current with a change
    the store never made: its next reader rebuilds it, and the old value the store still holds is recalled."""
    from automem.errors import StoreError

    store = Store(location, Config())
    try:
        [first] = remember(store, [Candidate("项目统一用Python 3.11", wing="instruction")])
        gen = store.generation()
        [update] = remember(store, [Candidate("项目改用Python 3.12", wing="instruction")])
        assert update.action == "update" and update.superseded == [first.id]
        assert store.generation() == gen + 1 and index.is_fresh(location, gen + 1)

        store._collection = _UpdateFails(store._collection)
        with pytest.raises(StoreError):
            remember(store, [Candidate("项目改用Python 3.13", wing="instruction")])
        assert store.generation() == gen + 2  # the new value landed
        assert index.stamp_of(location)[0] == "stale"
    finally:
        store.close()
    store = Store(location, Config())
    try:
        assert store.ensure_index() is True  # rebuilt from the store
        active = {i.text for i in index.items(location)}
        assert {"项目改用Python 3.12", "项目改用Python 3.13"} <= active  # 3.12 was never superseded in the store
    finally:
        store.close()
