"""The recall index's file: where it is, its schema, its connections, and the rows written for a memory.

`<root>/automem/index/recall.sqlite3` (stdlib sqlite3): `memories` (one row per active memory), `words` (FTS5 over
the segmented text), `tally` (memories per profile, wing and scope), `recalls` (how often each was shown), `known`
(every id the index has seen and its state) and `meta` (version, generation stamp, a server sync's cursor). What
writes whole transactions (`apply`, `rebuild`, `sync_apply`) is `automem.core.index` and `automem.core.index_sync`;
this module holds the pieces they share.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..paths import Location, ensure_private_dir, make_private, sqlite_ro_uri
from .index_words import segment
from .memory import MAYBE_UPDATES, RELATED_TO, SAME_WORDS_AS

LAYOUT = "12"  # 2: task_id; 3: about_user; 4: audience; 5: others; 6: changed_at, replaces, known;
# 7: related_to; 8: same_words_as; 9: maybe_updates; 10: slots; 11: the dates of events in slots; 12: their kinds
# The layout and the lexicon the rows were read with: what a memory is filed under (`slots`) and whether it is about
# the user come of the lexicon, so a new lexicon makes an older index stale, and its rebuild reads every text again.
# The lexicon's file read as bytes, not through automem.core.tokens: a prefetch that only reads the index must not
# load the lexicon (tests/test_resident.py)
LEXICON_FILE = Path(__file__).resolve().parent.parent / "data" / "lexicon.yaml"
INDEX_VERSION = f"{LAYOUT}.{hashlib.sha256(LEXICON_FILE.read_bytes()).hexdigest()[:8]}"
INDEX_NAME = "recall.sqlite3"
COLUMNS = ("id", "text", "wing", "profile", "scope", "room", "status", "created_at", "updated_at", "pinned",
           "restated", "task_id", "about_user", "audience", "changed_at", "replaces", "related_to",
           "same_words_as", "maybe_updates", "slots")
_INT_COLUMNS = frozenset({"created_at", "updated_at", "pinned", "restated", "recalled", "about_user", "changed_at"})
STATES = ("active", "superseded", "forgotten", "raced")  # `known.state`; raced: a race's loser, not shown


# -- the file --------------------------------------------------------------------------------------------------
def index_path(location: Location):
    return location.automem_dir / "index" / INDEX_NAME


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories(
    rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, text TEXT NOT NULL, wing TEXT NOT NULL,
    profile TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '', room TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'active', created_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0, restated INTEGER NOT NULL DEFAULT 0,
    task_id TEXT NOT NULL DEFAULT '', about_user INTEGER NOT NULL DEFAULT 0, audience TEXT NOT NULL DEFAULT '',
    changed_at INTEGER NOT NULL DEFAULT 0, replaces TEXT NOT NULL DEFAULT '', related_to TEXT NOT NULL DEFAULT '',
    same_words_as TEXT NOT NULL DEFAULT '', maybe_updates TEXT NOT NULL DEFAULT '', slots TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS memories_by_replaces ON memories(replaces) WHERE replaces != '';
CREATE TABLE IF NOT EXISTS known(id TEXT PRIMARY KEY, state TEXT NOT NULL, changed_at INTEGER NOT NULL DEFAULT 0,
    written_at REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS memories_by_wing ON memories(wing, profile, scope);
CREATE INDEX IF NOT EXISTS memories_by_time ON memories(updated_at);
CREATE INDEX IF NOT EXISTS memories_by_restated ON memories(restated, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_pinned ON memories(pinned, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_about_user ON memories(about_user, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_related ON memories(related_to) WHERE related_to != '';
CREATE INDEX IF NOT EXISTS memories_by_same_words ON memories(same_words_as) WHERE same_words_as != '';
CREATE INDEX IF NOT EXISTS memories_by_maybe ON memories(maybe_updates) WHERE maybe_updates != '';
CREATE INDEX IF NOT EXISTS memories_by_slots ON memories(wing, profile, scope, slots) WHERE slots != '';
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(body, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS recalls(id TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS recalls_by_n ON recalls(n);
CREATE TABLE IF NOT EXISTS tally(profile TEXT NOT NULL, wing TEXT NOT NULL, scope TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active', n INTEGER NOT NULL, PRIMARY KEY(profile, wing, scope));
"""


def connect_rw(location: Location) -> sqlite3.Connection:
    path = index_path(location)
    ensure_private_dir(path.parent)
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    # No fsync per commit: the index is derived from the store, and a commit that a power cut loses shows as a
    # stale generation, a gap or an unreadable file, each of which makes the next reader rebuild it. A killed process
    # loses nothing (the OS has the pages). The fsyncs cost 0.8 ms a commit, several per write.
    conn.execute("PRAGMA synchronous = OFF")
    try:
        conn.executescript(SCHEMA)
    except sqlite3.OperationalError:
        try:
            relaid = _relayout(conn)
        except BaseException:
            conn.close()
            raise
        if not relaid:
            conn.close()
            raise
    make_private(path.parent)
    return conn


def _relayout(conn: sqlite3.Connection) -> bool:
    """After the schema failed on `conn`: an older automem's index (this schema indexes a column its tables lack)
    is made again in this layout, empty and stamped stale, and the next reader rebuilds it from the store (its
    tables are derived data); how often each memory was recalled, kept only here, stays. False, nothing changed,
    when the file is no automem index (no version): the schema's error stands."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        try:
            version = meta_value(conn, "version")
        except sqlite3.Error:
            version = ""
        if not version:
            conn.execute("ROLLBACK")
            return False
        if version != INDEX_VERSION:  # still the older layout (another process may have relaid it out meanwhile)
            for table in ("memories", "words", "tally", "others", "known"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def connect_ro(location: Location) -> sqlite3.Connection | None:
    path = index_path(location)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, timeout=10.0, isolation_level=None)
        conn.execute("SELECT 1 FROM meta LIMIT 1")
        return conn
    except sqlite3.Error:
        return None


@contextmanager
def reading(location: Location) -> Iterator[sqlite3.Connection | None]:
    """The index opened read-only for one read, or None when there is no index it can read. An SQLite error inside
    the block ends it quietly (the reader returns its empty answer after the block); the connection is closed
    either way. Every read of the index goes through here."""
    conn = connect_ro(location)
    if conn is None:
        yield None
        return
    try:
        yield conn
    except sqlite3.Error:
        pass
    finally:
        conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on `conn` (taken at once, so two writers never interleave), closed after."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def meta_value(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def reflects(conn: sqlite3.Connection, generation: str) -> bool:
    """Whether the index open on `conn` is of this version and reflects the store's `generation`."""
    return meta_value(conn, "version") == INDEX_VERSION and meta_value(conn, "generation") == generation


def _about_user(memory: Any) -> int:
    """1 for a persona memory about the user themself ("用户在西安教物理", "The user is left-handed"), 0 for one
    about someone or something else ("The user's wife ...", "Anna likes tea") and for the other wings. The write
    path's own text analysis decides (loaded only by writers; readers get the stored column)."""
    if memory.wing != "user":
        return 0
    try:
        from .analysis import is_about_user

        return int(is_about_user(memory.text))
    except Exception:  # noqa: BLE001 - a ranking hint never fails the write that carries the memory
        return 0


def _slots(memory: Any) -> str:
    """"|LIVE|WORK|": the single-valued attributes a persona or instruction memory may fill, read loosely
    (`automem.core.single_valued.slots_said`), so the write path finds the old value of one however far its wording
    ("The user lives in Chicago" / "Austin is where I've settled"); for an event, the full dates it names
    ("|date:07-18|", `automem.core.occurrence.dates`), so a telling of it worded far apart ("PTO 7/7 through 7/18")
    is found by its date (`single_valued.filed_under`). Written once, by writers."""
    try:
        from .analysis import analyse
        from .single_valued import filed_under

        found = sorted(filed_under(analyse(memory.text), memory.wing))
    except Exception:  # noqa: BLE001 - a lookup hint never fails the write that carries the memory
        return ""
    return f"|{'|'.join(found)}|" if found else ""


def _row_of(memory: Any, known: dict[str, tuple[str, str, int, str]] | None = None) -> tuple:
    """The row of `memory`; `known` (id -> (text, wing, about_user, slots)) spares a rebuild the text analysis of
    unchanged rows."""
    before = known.get(memory.id) if known else None
    unchanged = before is not None and tuple(before[:2]) == (memory.text, memory.wing)
    about = int(before[2]) if unchanged else _about_user(memory)
    slots = str(before[3]) if unchanged else _slots(memory)
    return (memory.id, memory.text, memory.wing, memory.profile, getattr(memory, "scope", "") or "",
            getattr(memory, "room", "") or "", "active", int(memory.created_at or 0), int(memory.updated_at or 0),
            int(getattr(memory, "pinned", 0) or 0), int(getattr(memory, "restated", 0) or 0),
            getattr(memory, "task_id", "") or "", about, getattr(memory, "audience", "") or "",
            int(getattr(memory, "changed_at", 0) or 0), getattr(memory, "replaces", "") or "",
            str((getattr(memory, "extra", None) or {}).get(RELATED_TO) or ""),
            str((getattr(memory, "extra", None) or {}).get(SAME_WORDS_AS) or ""),
            str((getattr(memory, "extra", None) or {}).get(MAYBE_UPDATES) or ""), slots)


def _count(conn: sqlite3.Connection, key: tuple[str, str, str], delta: int) -> None:
    """The tally: how many memories each (profile, wing, scope) holds, so a reader counts what it may see without
    reading every row (a 100k index: 20 ms and more a count, in every fresh process and after every write)."""
    conn.execute("INSERT INTO tally(profile, wing, scope, n) VALUES (?, ?, ?, ?) ON CONFLICT(profile, wing, scope) "
                 "DO UPDATE SET n = n + excluded.n", (*key, delta))


def ensure_tally(conn: sqlite3.Connection) -> None:
    """An index written before the tally existed gets it filled once, by its next writer (readers count rows)."""
    if meta_value(conn, "tally") != "1":
        conn.execute("DELETE FROM tally")
        conn.execute("INSERT INTO tally(profile, wing, scope, n) SELECT profile, wing, scope, COUNT(*) FROM memories "
                     "GROUP BY profile, wing, scope")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('tally', '1')")


def put_rows(conn: sqlite3.Connection, memories: Iterable[Any],
             known: dict[str, tuple[str, str, int, str]] | None = None) -> None:
    for m in memories:
        row = conn.execute("SELECT rowid, text, profile, wing, scope FROM memories WHERE id = ?", (m.id,)).fetchone()
        values = _row_of(m, known)
        key = (values[3], values[2], values[4])  # profile, wing, scope
        if row is None:
            cur = conn.execute(f"INSERT INTO memories({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})",
                               values)
            conn.execute("INSERT INTO words(rowid, body) VALUES (?, ?)", (cur.lastrowid, segment(m.text)))
            _count(conn, key, 1)
        else:
            conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in COLUMNS[1:])} WHERE rowid = ?",
                         (*values[1:], row[0]))
            if row[1] != m.text:
                conn.execute("UPDATE words SET body = ? WHERE rowid = ?", (segment(m.text), row[0]))
            if tuple(row[2:]) != key:
                _count(conn, tuple(row[2:]), -1)
                _count(conn, key, 1)


def drop_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> int:
    gone = 0
    for mid in ids:
        row = conn.execute("SELECT rowid, profile, wing, scope FROM memories WHERE id = ?", (mid,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM words WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
            _count(conn, tuple(row[1:]), -1)
            gone += 1
        conn.execute("DELETE FROM recalls WHERE id = ?", (mid,))
    return gone


def note_known(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, int]], written_at: float) -> None:
    """(id, state, changed_at) into `known`, with when this machine wrote them (0: read from the server)."""
    conn.executemany("INSERT INTO known(id, state, changed_at, written_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO "
                     "UPDATE SET state = excluded.state, changed_at = excluded.changed_at, "
                     "written_at = MAX(known.written_at, excluded.written_at)",
                     [(i, st, int(ch or 0), written_at) for i, st, ch in rows])


def settle_races(conn: sqlite3.Connection, targets: Iterable[str] | None = None) -> list[str]:
    """Two active memories that replaced the same one (machines that raced): only the later is shown; the others
    are dropped from the rows and known as `raced` until the store says otherwise. `targets`: the replaced ids to
    look at (None: all). Returns the losers' ids."""
    from .convergence import winner

    if targets is None:
        targets = [r[0] for r in conn.execute("SELECT replaces FROM memories WHERE replaces != '' GROUP BY replaces "
                                              "HAVING COUNT(*) > 1")]
    losers: list[str] = []
    for target in set(targets):
        if not target:
            continue
        # `!= ''` lets SQLite use the partial index memories_by_replaces (without: every row, 0.6 ms at 10k)
        rivals = conn.execute("SELECT id, created_at FROM memories WHERE replaces = ? AND replaces != ''",
                              (target,)).fetchall()
        if len(rivals) < 2:
            continue
        win = winner(rivals)
        losers += [mid for mid, _ in rivals if mid != win]
    if losers:
        drop_rows(conn, losers)
        conn.executemany("UPDATE known SET state = 'raced' WHERE id = ?", [(i,) for i in losers])
    return losers
