"""The recall index's reads: what recall, the dashboard and status ask of it, without Chroma.

Rows become `RecallItem`s; a Chroma `where` filter becomes SQL on the index's columns (`where_sql`). Each read is
bounded whatever the store's size (`block_candidates`, `keyword_search`, `page`); a reader without an index, or one
it cannot read, gets an empty answer (or None where the caller must read the store instead). How often a memory
was recalled is counted here (`note_recalled`), in a table a rebuild keeps. Pairs the write path kept apart for lack
of a judge wait here for the next one (`waiting`, `count_waiting`).
"""

from __future__ import annotations

import math
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from ..paths import Location
from .index_file import COLUMNS, index_path, meta_value, reading, reflects
from .index_words import bound_query, match_expression, query_terms
from .memory import CATEGORY_OF_WING


@dataclass
class RecallItem:
    """One active memory as recall sees it (a row of the index)."""

    id: str
    text: str
    wing: str
    profile: str
    updated_at: int = 0
    created_at: int = 0
    room: str = ""
    scope: str = ""  # automem.core.memory.OWNER, or a person's or a chat's scope
    pinned: int = 0
    restated: int = 0
    recalled: int = 0
    about_user: int = 0  # 1: a persona memory about the user themself, not about someone else (automem.core.index_file)
    audience: str = ""  # automem.core.memory: "" the owner's profiles, "everyone" confirmed for everyone
    same_words_as: str = ""  # an older memory saying the same words moved, kept apart for a judge: shown once

    @property
    def category(self) -> str:
        return CATEGORY_OF_WING.get(self.wing, self.wing)


def newest_first(item: Any) -> tuple:
    return (-(item.updated_at or item.created_at), -item.created_at, item.id)


# -- where filters -> SQL (plain functions) ----------------------------------------------------------------------
_OPS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def where_sql(where: dict | None) -> tuple[str, list]:
    """A Chroma `where` filter (the operators automem.core.visibility builds) as an SQL condition on the index's
    columns. Raises ValueError for a key or operator the index does not hold."""
    if not where:
        return "1", []
    parts: list[str] = []
    params: list = []
    for key, cond in where.items():
        if key in ("$and", "$or"):
            subs = [where_sql(c) for c in cond]
            joiner = " AND " if key == "$and" else " OR "
            parts.append("(" + joiner.join(s for s, _ in subs) + ")" if subs else "1")
            for _, p in subs:
                params += p
            continue
        if key not in COLUMNS:
            raise ValueError(f"the recall index has no column {key!r}")
        conds = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, arg in conds.items():
            if op in _OPS:
                parts.append(f"m.{key} {_OPS[op]} ?")
                params.append(arg)
            elif op in ("$in", "$nin"):
                values = list(arg)
                if not values:
                    parts.append("0" if op == "$in" else "1")
                    continue
                marks = ",".join("?" * len(values))
                parts.append(f"m.{key} {'IN' if op == '$in' else 'NOT IN'} ({marks})")
                params += values
            else:
                raise ValueError(f"unsupported filter operator {op}")
    return "(" + " AND ".join(parts) + ")", params


# -- reads ---------------------------------------------------------------------------------------------------------
@contextmanager
def _filtered(location: Location, where: dict | None, *, strict: bool = True
              ) -> Iterator[tuple[sqlite3.Connection, str, list] | None]:
    """(the index opened read-only, `where` as an SQL condition, its parameters) for one read, or None without an
    index it can read (`reading`: an SQLite error ends the block quietly). A filter on a field the index does not
    hold raises ValueError, or gives None when not `strict` (that reader's caller reads the store instead)."""
    with reading(location) as conn:
        if conn is None:
            yield None
            return
        try:
            cond, params = where_sql(where)
        except ValueError:
            if strict:
                raise
            yield None
            return
        yield conn, cond, params


def _items(rows: Iterable[tuple]) -> list[RecallItem]:
    return [RecallItem(id=r[0], text=r[1], wing=r[2], profile=r[3], scope=r[4], room=r[5], created_at=r[6],
                       updated_at=r[7], pinned=r[8], restated=r[9], recalled=r[10] or 0, about_user=r[11],
                       audience=r[12] or "", same_words_as=r[13] or "")
            for r in rows]


_FIELDS = ("m.id, m.text, m.wing, m.profile, m.scope, m.room, m.created_at, m.updated_at, m.pinned, m.restated, r.n, "
           "m.about_user, m.audience, m.same_words_as")
_SELECT = f"SELECT {_FIELDS} FROM memories m LEFT JOIN recalls r ON r.id = m.id"  # rows for _items
_SELECT_ROWID = f"SELECT m.rowid, {_FIELDS} FROM memories m LEFT JOIN recalls r ON r.id = m.id"


def items(location: Location, where: dict | None = None) -> list[RecallItem]:
    """The indexed memories passing `where` (a visibility filter)."""
    with _filtered(location, where) as read:
        if read:
            conn, cond, params = read
            return _items(conn.execute(f"{_SELECT} WHERE {cond}", params).fetchall())
    return []


def filling(location: Location, slots: Sequence[str], where: dict | None, limit: int = 3,
            generation: str | None = None) -> list[RecallItem] | None:
    """Up to `limit` memories passing `where` that fill one of `slots` (the `slots` column), newest first; None when
    the index cannot say, or (`generation` given) does not reflect that generation of the store yet. How the write
    path finds a slot's old value that no vector query brings back ("The user lives in Chicago" is 0.85 away from
    "Austin is where I've settled")."""
    if not slots:
        return []
    with _filtered(location, where, strict=False) as read:
        if read:
            conn, cond, params = read
            if generation is not None and not reflects(conn, generation):
                return None
            said = " OR ".join("m.slots LIKE ?" for _ in slots)
            # the newest ids first, then their rows: sorting every matching row whole costs more than the read
            newest = (f"SELECT m.id FROM memories m WHERE m.slots != '' AND ({said}) AND {cond} "
                      "ORDER BY m.updated_at DESC LIMIT ?")
            return _items(conn.execute(f"{_SELECT} WHERE m.id IN ({newest}) ORDER BY m.updated_at DESC",
                                       [f"%|{s}|%" for s in slots] + params + [int(limit)]).fetchall())
    return None


def matching_ids(location: Location, where: dict | None, limit: int) -> list[str] | None:
    """The ids of every active memory passing `where` when there are at most `limit`, else None (or None when the
    index cannot say): a search whose filter few memories pass reads those few instead of widening a nearest-
    neighbour query over the whole store (one profile's instructions, a stranger's own memories)."""
    with _filtered(location, where, strict=False) as read:
        if read:
            conn, cond, params = read
            ids = [r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {cond} LIMIT ?",
                                              params + [int(limit) + 1])]
            return ids if len(ids) <= limit else None
    return None


def visible_ids(location: Location, ids: Sequence[str], where: dict | None) -> set[str] | None:
    """Which of `ids` are active memories passing `where`, as the index holds them; None when it cannot say (no
    index, or a filter on a field it does not hold)."""
    with _filtered(location, where, strict=False) as read:
        if read:
            conn, cond, params = read
            out: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                out.update(r[0] for r in conn.execute(
                    f"SELECT m.id FROM memories m WHERE m.id IN ({','.join('?' * len(chunk))}) AND {cond}",
                    chunk + params))
            return out
    return None


def linking_to(location: Location, ids: Sequence[str]) -> list[str] | None:
    """The active memories whose `related_to` names one of `ids` (kept apart from it for lack of a judge), as the
    index holds them; None when it cannot say."""
    with reading(location) as conn:
        if conn is not None:
            out: list[str] = []
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                # `!= ''` lets SQLite use the partial index memories_by_related (without: every row, 1.5 ms at 10k)
                out += [r[0] for r in conn.execute(
                    f"SELECT m.id FROM memories m WHERE m.related_to IN ({','.join('?' * len(chunk))}) "
                    "AND m.related_to != ''", chunk)]
            return out
    return None


def block_candidates(location: Location, where: dict | None = None, per_signal: int = 300) -> list[RecallItem]:
    """What the system block may choose from, without reading every memory: the pinned ones, and for each other
    signal (restated, recalled, newest, the newest about the user) the `per_signal` memories that lead on it. A
    memory outside all of these cannot outrank the ones inside (automem.core.recall.block_score grows with each
    signal)."""
    with _filtered(location, where) as read:
        if read:
            # Each query walks one index in order and stops after `per_signal` visible rows: flat in the store's
            # size. (INDEXED BY: left to itself SQLite picks the wing index and sorts every visible row.)
            by = _SELECT.replace("FROM memories m", "FROM memories m INDEXED BY {}")
            conn, cond, params = read
            queries = [by.format("memories_by_pinned") +
                       f" WHERE {cond} AND m.pinned > 0 ORDER BY m.pinned DESC, m.updated_at DESC LIMIT ?",
                       by.format("memories_by_restated") +
                       f" WHERE {cond} AND m.restated > 0 ORDER BY m.restated DESC, m.updated_at DESC LIMIT ?",
                       # CROSS JOIN: the recalls are walked in count order (left to itself SQLite scans every memory)
                       f"SELECT {_FIELDS} FROM recalls r INDEXED BY recalls_by_n CROSS JOIN memories m "
                       f"ON m.id = r.id WHERE {cond} ORDER BY r.n DESC LIMIT ?",
                       by.format("memories_by_time") + f" WHERE {cond} ORDER BY m.updated_at DESC LIMIT ?",
                       by.format("memories_by_about_user") +
                       f" WHERE {cond} AND m.about_user > 0 ORDER BY m.updated_at DESC LIMIT ?"]
            out: dict[str, RecallItem] = {}
            for sql in queries:
                for item in _items(conn.execute(sql, [*params, per_signal]).fetchall()):
                    out.setdefault(item.id, item)
            return list(out.values())
    return []


# A term held by more than COMMON_DF memories is not searched on: scoring it reads every memory that holds it, so
# the cost would follow the store's size. It still counts in `coverage` for the candidates the rarer terms and the
# vector half bring. (A share of the store, the first rule, let a 100k store search terms in 10,000 memories:
# keyword search p95 80 ms there against 5 ms at 1k.)
COMMON_DF = 2000
# A term's frequency among the visible memories is counted exactly when at most DF_CAP memories hold it, else
# estimated from its share of the whole store and capped there (idf barely moves beyond; counting would read up to
# DF_CAP rows per term, and a Chinese question has a dozen terms).
DF_CAP = 1000
CANDIDATES_PER_HIT = 10  # keyword candidates read per hit wanted, before the visibility filter


def keyword_search(location: Location, query: str, where: dict | None = None, limit: int = 20
                   ) -> tuple[list[tuple[RecallItem, float]], dict[str, float]]:
    """(hits, weights): the memories passing `where` that share words with `query`, best BM25 first, as (item,
    score > 0); and each topic term of the question with its inverse document frequency (BM25's idf, over the
    memories the reader sees): a rare word ("pottery") weighs more than a common one ("going").

    The cost is bounded whatever the store's size: a term's visible frequency is counted only when it is rare
    (DF_CAP), else estimated; a term held by more than COMMON_DF memories is not searched on (the two rarest terms
    are, when every term is that common); and the best BM25 candidates are taken from the keyword index first, then
    filtered by visibility, with the full filtered query only when too few of them are visible."""
    terms = query_terms(bound_query(query))
    if not terms:
        return [], {}
    with _filtered(location, where) as read:
        if read:
            return _keyword_search(*read, terms, where, limit)
    return [], {}


def _keyword_search(conn: sqlite3.Connection, cond: str, params: list, terms: list[str], where: dict | None,
                    limit: int) -> tuple[list[tuple[RecallItem, float]], dict[str, float]]:
    tallied = meta_value(conn, "tally") == "1"
    total = conn.execute("SELECT COALESCE(SUM(n), 0) FROM tally" if tallied else
                         "SELECT COUNT(*) FROM memories").fetchone()[0]
    df = {t: conn.execute("SELECT COUNT(*) FROM words WHERE words MATCH ?", [match_expression([t])]).fetchone()[0]
          for t in terms}
    n = (_visible_count(conn, cond, params, tallied and _keys(where) <= _TALLIED) if where else total)

    def visible_df(t: str) -> int:
        """How many of the memories the reader sees hold `t`: counted when few hold it, else estimated."""
        if not where or not total:
            return df[t]
        if 0 < df[t] <= DF_CAP:
            return conn.execute(f"SELECT COUNT(*) FROM words JOIN memories m ON m.rowid = words.rowid "
                                f"WHERE words MATCH ? AND {cond}", [match_expression([t]), *params]).fetchone()[0]
        return min(DF_CAP, math.ceil(df[t] * n / total))

    seen = {t: visible_df(t) for t in terms}
    weights = {t: math.log(1 + max(0.0, n - d + 0.5) / (d + 0.5)) for t, d in seen.items()}
    wanted = [t for t in terms if seen[t] and df[t] <= COMMON_DF]
    if not wanted:
        wanted = sorted((t for t in terms if seen[t]), key=lambda t: df[t])[:2]
    if not wanted:
        return [], weights
    expr = match_expression(wanted)
    pool = max(limit * CANDIDATES_PER_HIT, 100)
    found = conn.execute("SELECT rowid, -rank FROM words WHERE words MATCH ? ORDER BY rank LIMIT ?",
                         [expr, pool]).fetchall()
    score = dict(found)
    rows = []
    if found:
        marks = ",".join("?" * len(found))
        rows = conn.execute(f"{_SELECT_ROWID} WHERE m.rowid IN ({marks}) AND {cond}",
                            [r for r, _ in found] + params).fetchall()
    if len(rows) < limit and len(found) == pool:  # the visible ones are rarer: ask the filtered query
        ranked = conn.execute(f"SELECT words.rowid, -rank FROM words JOIN memories m ON m.rowid = words.rowid "
                              f"WHERE words MATCH ? AND {cond} ORDER BY rank LIMIT ?",
                              [expr, *params, int(limit)]).fetchall()
        score = dict(ranked)
        marks = ",".join("?" * len(ranked))
        rows = conn.execute(f"{_SELECT_ROWID} WHERE m.rowid IN ({marks})",
                            [r for r, _ in ranked]).fetchall() if ranked else []
    rows.sort(key=lambda r: -score.get(r[0], 0.0))
    hits = [(item, float(score.get(row[0], 0.0))) for item, row in zip(_items([r[1:] for r in rows]), rows)]
    return hits[:limit], weights


_COUNTS: dict[tuple, int] = {}  # (index stamp, filter) -> visible memories: a long-lived reader counts once per write
_TALLIED = frozenset({"profile", "wing", "scope", "status"})  # the columns the tally holds (status: 'active')


def _keys(where: dict) -> set[str]:
    """The fields a Chroma `where` filter names."""
    out: set[str] = set()
    for key, cond in where.items():
        if key in ("$and", "$or"):
            for sub in cond:
                out |= _keys(sub)
        else:
            out.add(key)
    return out


def _visible_count(conn: sqlite3.Connection, cond: str, params: list, tallied: bool = False) -> int:
    if tallied:  # a sum over a few dozen (profile, wing, scope) rows, whatever the store's size
        return conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM tally m WHERE {cond}", params).fetchone()[0]
    key = (meta_value(conn, "generation"), meta_value(conn, "built_at"), cond, tuple(params))
    if key[0].startswith(("pending", "stale")) or key not in _COUNTS:
        if len(_COUNTS) > 256:
            _COUNTS.clear()
        _COUNTS[key] = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params).fetchone()[0]
    return _COUNTS[key]


def page(location: Location, where: dict | None = None, offset: int = 0, limit: int = 50
         ) -> tuple[list[RecallItem], int] | None:
    """One page of the indexed (active) memories passing `where`, newest first (`updated_at`, then `created_at`,
    then id, all descending: the order of `Store.list`), and how many pass in all. None when the index cannot
    answer (no index, or a filter on a field it does not hold): the caller reads the store instead.

    The rows are read by walking the time index and stopping after the page: flat in the store's size for the first
    pages (a deep page or a rare filter walks further, at most the whole index)."""
    with _filtered(location, where, strict=False) as read:
        if read:
            conn, cond, params = read
            tallied = meta_value(conn, "tally") == "1" and _keys(where or {}) <= _TALLIED
            total = _visible_count(conn, cond, params, tallied)
            by_time = _SELECT.replace("FROM memories m", "FROM memories m INDEXED BY memories_by_time")
            rows = conn.execute(f"{by_time} WHERE {cond} ORDER BY m.updated_at DESC, m.created_at DESC, m.id DESC "
                                f"LIMIT ? OFFSET ?", [*params, max(0, int(limit)), max(0, int(offset))]).fetchall()
            return _items(rows), int(total)
    return None


def scopes(location: Location, profile: str) -> dict[str, int] | None:
    """{scope: active memories} of one profile (the owner's scope is ""), from the tally; None without an index."""
    with reading(location) as conn:
        if conn is not None:
            table = "tally" if meta_value(conn, "tally") == "1" else "(SELECT profile, scope, 1 AS n FROM memories)"
            return {scope: int(n) for scope, n in conn.execute(
                f"SELECT scope, SUM(n) FROM {table} WHERE profile = ? GROUP BY scope HAVING SUM(n) > 0", [profile])}
    return None


def counts(location: Location) -> dict:
    """{"owner": {profile: {wing: n}}, "others": {profile: {"memories": n, "scopes": k}}} of the active memories."""
    out: dict = {"owner": {}, "others": {}}
    with reading(location) as conn:
        if conn is not None:
            for profile, wing, n in conn.execute(
                    "SELECT profile, wing, COUNT(*) FROM memories WHERE scope = '' GROUP BY profile, wing"):
                out["owner"].setdefault(profile, {})[wing] = n
            for profile, n, k in conn.execute(
                    "SELECT profile, COUNT(*), COUNT(DISTINCT scope) FROM memories WHERE scope != '' GROUP BY profile"):
                out["others"][profile] = {"memories": n, "scopes": k}
    return out


# The newer memory names the older in `related_to` (kept apart, close) or `maybe_updates` (far: asked for an update);
# one SELECT per column, so each uses its partial index.
_WAITING = ("SELECT a.rowid, a.id, b.id, a.profile, b.profile, a.wing, a.scope FROM memories a JOIN memories b "
            "ON b.id = a.{col} WHERE a.{col} != '' AND {same_wing} AND b.scope = a.scope")
_LINKS = ("related_to", "maybe_updates")
# A pair is of one wing, or joins persona and instruction: a new value found by the attribute both fill, filed in
# the other wing ("从现在起用日语跟我说" as persona, "请用英文回答我" as an instruction), or a candidate the screening
# refiled, linked to what it may restate in the wing it was given for (automem.core.write_path._across_wings).
_SAME_WING = "(b.wing = a.wing OR (a.wing IN ('user', 'instruction') AND b.wing IN ('user', 'instruction')))"


def waiting(location: Location, scope: str | None = None, limit: int | None = None) -> list[tuple[str, ...]]:
    """Active pairs the write path kept apart for lack of a judge, oldest first: (newer id, older id, newer's
    profile, older's profile, wing, scope) where the newer memory's `related_to` or `maybe_updates` names the older
    and both are active in one wing and scope. Which of them a writer may settle is the write path's business
    (visibility)."""
    with reading(location) as conn:
        if conn is not None:
            parts, params = [], []
            for col in _LINKS:
                sql = _WAITING.format(col=col, same_wing=_SAME_WING)
                if scope is not None:
                    sql += " AND a.scope = ?"
                    params.append(scope)
                parts.append(sql)
            sql = " UNION ALL ".join(parts) + " ORDER BY 1"
            if limit is not None:
                sql += " LIMIT ?"
                params.append(int(limit))
            return [tuple(r[1:]) for r in conn.execute(sql, params)]
    return []


def count_waiting(location: Location) -> dict[str, int]:
    """{profile: pairs waiting for a judge} (the newer memory's profile), from the index."""
    with reading(location) as conn:
        if conn is not None:
            out: dict[str, int] = {}
            for col in _LINKS:
                for p, n in conn.execute(
                        f"SELECT a.profile, COUNT(*) FROM memories a JOIN memories b ON b.id = a.{col} "
                        f"WHERE a.{col} != '' AND {_SAME_WING} AND b.scope = a.scope GROUP BY a.profile"):
                    out[p] = out.get(p, 0) + n
            return out
    return {}


def note_recalled(location: Location, ids: Sequence[str]) -> None:
    """Count that these memories were shown (a ranking signal for the system block). Best effort: a busy or
    read-only index just skips the count."""
    if not ids or not index_path(location).exists():
        return
    try:
        conn = sqlite3.connect(str(index_path(location)), timeout=0.5, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous = OFF")  # a lost count costs nothing; an fsync on the start path does
            conn.executemany("INSERT INTO recalls(id, n) VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1",
                             [(i,) for i in ids])
        finally:
            conn.close()
    except sqlite3.Error:
        pass


def recall_signal(n: int) -> float:
    """log-scaled count (0 for 0): the tenth recall matters less than the second."""
    return math.log1p(max(0, int(n or 0)))
