"""The recall index: what recall reads without Chroma or the embedding model.

`<root>/automem/index/recall.sqlite3` (stdlib sqlite3) holds one row per active memory (its text and the metadata
recall ranks and filters by) and an FTS5 keyword index over its words. FTS5 splits text on spaces and punctuation,
which Chinese does not have, so text is segmented first (`segment`): every CJK run becomes its characters and
their bigrams, Latin words stay words (Porter-stemmed by FTS5).

The store keeps the index current in the same write, under the write lock (`apply`): no write ever reads the
whole store back, so a write costs the same at 100,000 memories as at 100. Rows are written before Chroma's and
stamped with the generation the write is about to have; a write that dies half-way leaves the stamp and the
store's generation file apart, and the next reader rebuilds the index once (`rebuild`), as it does for a store
that has no index yet.

On a Chroma server (no generation file; other machines write too) the index follows the server by change
(`automem.core.sync`): every write stamps the record's `changed_at`, and a sync asks for what changed since the last
one (`sync_apply`), so it costs what changed, not the store's size. `known` holds every id the index has seen and
its state (active, superseded, forgotten, raced), with when this machine last wrote it, so a sync that read the
server before a local write never puts back what that write replaced, and what the index covers can be counted
against the store's count (`covered`: Chroma's own on the embedded store, on every open; the server's on a
background sync): a gap the generation stamp or the change stamps cannot show makes it rebuild or compare ids. Two
active memories replacing the same one (a race between machines) show only the later one
(`automem.core.convergence`).

How often a memory was recalled is kept here only (`recalled`), in a table a rebuild keeps. Whether a persona
memory is about the user themself (`about_user`) is worked out once, when the row is written. A memory the write
path kept apart from a close one for lack of a judge names it (`related_to`): such pairs wait for the next judge
(`waiting`, `count_waiting`).

This module writes the index as a whole (`apply`, `rebuild`, `advance`, `mark_stale`, `purge`) and says whether it
reflects the store (`stamp_of`, `is_fresh`, `covered`). The rest is in four modules, whose public names it
re-exports (callers use `automem.core.index`): `index_file` (the file, its schema, a memory's rows),
`index_words` (segmentation, a question's terms), `index_reads` (what recall reads) and `index_sync` (a server
sync, `known`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any, Iterable, Sequence

from ..paths import Location
from .index_file import (
    INDEX_NAME,
    INDEX_VERSION,
    SCHEMA,
    STATES,
    connect_rw,
    drop_rows,
    ensure_tally,
    index_path,
    meta_value,
    note_known,
    put_rows,
    reading,
    reflects,
    settle_races,
    transaction,
)
from .index_reads import (
    CANDIDATES_PER_HIT,
    COMMON_DF,
    DF_CAP,
    RecallItem,
    block_candidates,
    count_waiting,
    counts,
    filling,
    items,
    keyword_search,
    linking_to,
    matching_ids,
    newest_first,
    note_recalled,
    page,
    recall_signal,
    scopes,
    visible_ids,
    waiting,
    where_sql,
)
from .index_sync import (
    SERVER_STAMP,
    SYNC_AGE_S,
    SyncApplied,
    known_ids,
    meta_of,
    note_meta,
    raced,
    sync_apply,
    synced_at,
)
from .index_words import (
    MAX_QUERY_CHARS,
    STOP_CJK,
    STOP_LATIN,
    bound_query,
    coverage,
    match_expression,
    query_terms,
    segment,
)

__all__ = [
    # this module: whole-index writes, freshness and coverage
    "advance", "apply", "covered", "covered_ids", "is_fresh", "mark_stale", "purge", "rebuild", "stamp_of",
    # index_file
    "INDEX_NAME", "INDEX_VERSION", "STATES", "index_path",
    # index_reads
    "CANDIDATES_PER_HIT", "COMMON_DF", "DF_CAP", "RecallItem", "block_candidates", "count_waiting", "counts", "filling",
    "items", "keyword_search", "linking_to", "matching_ids", "newest_first", "note_recalled", "page", "recall_signal",
    "scopes", "visible_ids", "waiting", "where_sql",
    # index_sync
    "SERVER_STAMP", "SYNC_AGE_S", "SyncApplied", "known_ids", "meta_of", "note_meta", "raced", "sync_apply",
    "synced_at",
    # index_words
    "MAX_QUERY_CHARS", "STOP_CJK", "STOP_LATIN", "bound_query", "coverage", "match_expression", "query_terms",
    "segment",
]


def stamp_of(location: Location) -> tuple[str, float]:
    """(generation, built_at) the index says it reflects; ("", 0) without an index."""
    with reading(location) as conn:
        if conn is not None and meta_value(conn, "version") == INDEX_VERSION:
            try:
                return meta_value(conn, "generation"), float(meta_value(conn, "built_at", "0") or 0)
            except ValueError:  # a built_at that is not a number
                pass
    return "", 0.0


def is_fresh(location: Location, generation: int | None, now: float | None = None,
             max_age: float = SYNC_AGE_S) -> bool:
    """Whether the index reflects the store: the embedded store's `generation`, or (generation None: a server)
    a sync younger than `max_age` seconds."""
    if generation is None:
        meta = meta_of(location)
        now = time.time() if now is None else now
        return meta.get("generation") == SERVER_STAMP and now - synced_at(meta) < max_age
    with reading(location) as conn:
        return conn is not None and reflects(conn, str(generation))
    return False  # an SQLite error ended the read


def apply(location: Location, put: Sequence[Any] = (), drop: Sequence[str] = (), *,
          generation: int | None, continuing: bool = False) -> None:
    """The index's half of one store write, in one transaction, before the store's own: memories to (re)index
    (active ones; others are dropped) and ids to drop (forgotten). An index that reflected the embedded store's
    `generation` is marked pending until `advance` (after the store's write) moves it on; a write that dies in
    between leaves it pending, so its next reader rebuilds it. A stale index stays stale. The caller holds the
    store's write lock; `continuing`: an earlier write of the same hold of the lock left the index pending on
    `generation` and the caller moves it on once (`Store.write_group`). Every id is noted in `known` with this
    machine's clock, so a server sync that read the server before this write does not undo it."""
    active = [m for m in put if getattr(m, "status", "active") == "active"]
    inactive = [m for m in put if getattr(m, "status", "active") != "active"]
    with transaction(connect_rw(location)) as conn:
        version = meta_value(conn, "version")
        if version and version != INDEX_VERSION:  # another automem's layout: its next reader rebuilds it
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
            return
        if generation is not None:
            stamp = meta_value(conn, "generation")
            fresh = (meta_value(conn, "version") == INDEX_VERSION
                     and (stamp == str(generation) or (continuing and stamp == f"pending:{generation}"))) or (
                stamp == "" and generation == 0)  # a new store: nothing was written before this
            if fresh and stamp == "":
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('built_at', ?)", (str(time.time()),))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)",
                         (f"pending:{generation}" if fresh else "stale",))
        ensure_tally(conn)
        put_rows(conn, active)
        drop_rows(conn, [m.id for m in inactive] + list(drop))
        now = time.time()
        note_known(conn, [(m.id, getattr(m, "status", "active"), getattr(m, "changed_at", 0)) for m in put], now)
        note_known(conn, [(i, "forgotten", 0) for i in drop], now)
        settle_races(conn, [m.replaces for m in active if getattr(m, "replaces", "")])


def covered(location: Location) -> tuple[str, int] | None:
    """(generation stamp, ids the index accounts for: its rows and the other records it knows, superseded, held or
    a race's loser), read in one transaction; None without a readable index of this version. A row lost behind the
    index's back lowers it, as a record it never saw does."""
    with reading(location) as conn:
        if conn is not None:
            conn.execute("BEGIN")
            if meta_value(conn, "version") != INDEX_VERSION:
                return None
            n = conn.execute("SELECT (SELECT COUNT(*) FROM memories) + "
                             "(SELECT COUNT(*) FROM known WHERE state NOT IN ('active', 'forgotten'))").fetchone()[0]
            return meta_value(conn, "generation"), int(n)
    return None


def covered_ids(location: Location) -> tuple[set[str], set[str]] | None:
    """(ids of the indexed active memories, ids of the store's other records: superseded, held, a race's loser)
    as the index holds them."""
    with reading(location) as conn:
        if conn is not None:
            conn.execute("BEGIN")
            return ({r[0] for r in conn.execute("SELECT id FROM memories")},
                    {r[0] for r in conn.execute("SELECT id FROM known WHERE state NOT IN ('active', 'forgotten')")})
    return None


def mark_stale(location: Location) -> None:
    """Make the next reader rebuild the index (after a failed index write)."""
    conn = connect_rw(location)
    try:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
    finally:
        conn.close()


def advance(location: Location, old: int, new: int) -> None:
    """The store's generation moved from `old` to `new` (its write went through): an index that reflected `old`,
    or was pending on it, now reflects `new`."""
    if not index_path(location).exists():
        return
    conn = connect_rw(location)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'generation' AND value IN (?, ?)",
                     (str(new), str(old), f"pending:{old}"))
    finally:
        conn.close()


def rebuild(location: Location, memories: Iterable[Any], stamp: str, meta: dict[str, str] | None = None) -> int:
    """Replace the index with `memories` (the store's records, any status: the active ones are indexed, the others
    known) and stamp it, with `meta` (a server sync's cursor). Returns how many were indexed."""
    try:
        conn = connect_rw(location)
    except sqlite3.DatabaseError:  # not a database (a torn or foreign file): it is derived, so start again
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(str(index_path(location)) + suffix)
            except OSError:
                pass
        conn = connect_rw(location)
    n = 0
    with transaction(conn):
        try:  # what the text analysis found before (a server's index may be rebuilt again)
            known = {r[0]: r[1:] for r in conn.execute("SELECT id, text, wing, about_user, slots FROM memories")}
            if meta_value(conn, "version") not in ("", INDEX_VERSION):  # another layout or lexicon files otherwise
                known = {}
        except sqlite3.Error:  # no table yet, or an older layout without the column
            known = {}
        for table in ("memories", "words", "tally", "known", "others"):  # derived: rebuilt in this version's layout
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM meta WHERE key != 'purge'")  # a purge still owed stays owed
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        batch: list[Any] = []
        states: list[tuple[str, str, int]] = []
        for m in memories:
            states.append((m.id, getattr(m, "status", "active"), getattr(m, "changed_at", 0)))
            if getattr(m, "status", "active") != "active":
                continue
            batch.append(m)
            if len(batch) >= 500:
                put_rows(conn, batch, known)
                n += len(batch)
                batch = []
        put_rows(conn, batch, known)
        n += len(batch)
        note_known(conn, states, 0.0)
        n -= len(settle_races(conn))
        conn.execute("DELETE FROM recalls WHERE id NOT IN (SELECT id FROM memories)")
        for key, value in {"version": INDEX_VERSION, "generation": stamp, "built_at": str(time.time()),
                           "tally": "1", **(meta or {})}.items():
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
    return n


def purge(location: Location) -> None:
    """After a forget: rewrite the keyword index and the file so no page keeps a forgotten word (and clear the
    `purge` a server sync owes after dropping forgotten memories)."""
    path = index_path(location)
    if not path.exists():
        return
    conn = connect_rw(location)
    try:
        conn.execute("INSERT INTO words(words) VALUES ('rebuild')")
        conn.execute("VACUUM")
        conn.execute("DELETE FROM meta WHERE key = 'purge'")
    finally:
        conn.close()
    for suffix in ("-journal", "-wal"):
        try:
            os.unlink(str(path) + suffix)
        except OSError:
            pass
