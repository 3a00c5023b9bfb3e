"""Searching the store: the nearest memories a reader may see (`search`), and what a person asking should be shown
(`recall`: the vector half fused with the recall index's keyword half).

A filtered Chroma query costs what the filter matches (0.3-0.6 s at 100k memories for one profile's share), so the
nearest memories are asked unfiltered and filtered here, with visibility read from the recall index where it is
current (`_nearest_by_index`), in pools that widen by the visible share seen (`next_pool`); Chroma's filtered query
last. `Searching` is mixed into `automem.core.store.Store` and uses its client, records and recall index.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from ..errors import AutomemError
from .memory import Memory
from .visibility import OWNER, matches

SEARCH_POOL = 40  # unfiltered neighbours fetched before falling back to a filtered (slow) query
WIDE_POOL = 1000  # the widest unfiltered query tried before the filtered one


class Searching:
    """`Store.search`, `Store.recall` and the vector queries under them; a part of `Store`, never used alone."""

    def search(self, text: str | None = None, *, embedding: Sequence[float] | None = None, k: int = 5,
               profile: str | None = None, wing: str | None = None, wings: Iterable[str] | None = None,
               where: dict | None = None, include_hidden: bool = False, scopes: Sequence[str] | None = (OWNER,),
               inherit: bool = True) -> list[tuple[Memory, float]]:
        """Visible memories nearest to `text` (or `embedding`), nearest first, as (memory, cosine distance)."""
        if embedding is None:
            if not text:
                return []
            embedding = self.embed([text])[0]
        flt = self.where(profile, wing=wing, wings=wings, extra=where, include_hidden=include_hidden, scopes=scopes,
                         inherit=inherit)
        k = max(1, k)
        if not flt:
            return self._query(embedding, k)
        if self.backend == "embedded" and not include_hidden:
            found = self._nearest_by_index(embedding, k, flt)
            if found is not None:
                return found
        # Fast path: the nearest memories unfiltered, filtered here. Exact whenever it yields k visible ones (every
        # visible memory nearer than the k-th is among them). When too few were visible, a wider unfiltered query
        # sized by the visible share just seen (`next_pool`); Chroma's filtered query last.
        pool: int | None = max(SEARCH_POOL, 4 * k)
        while pool is not None:
            hits = self._query(embedding, pool)
            visible = [(m, d) for m, d in hits if matches(m.metadata(), flt)]
            if len(visible) >= k or len(hits) < pool:
                return visible[:k]
            pool = next_pool(pool, k, len(visible), reads_metadata=True)
        return self._query(embedding, k, flt)

    def filling(self, slots: Sequence[str], *, profile: str, wings: Sequence[str], scope: str,
                where: dict | None = None, limit: int = 3) -> list[Any]:
        """Up to `limit` visible memories of `profile` itself (not another profile's shared instructions), in its
        `wings` and `scope`, that fill one of the single-valued `slots` (for events: name one of the dates,
        "date:07-18"), newest first, as the recall index holds them (`index.RecallItem`: id, text, wing...): how the
        write path finds a slot's old value, or an event told on a date, whatever its wording.
        One SQLite read, no Chroma: the records are read only if a judge's answer is applied. Empty when the index
        is not current (a write never waits for its rebuild)."""
        from . import index

        if not slots:
            return []
        flt = self.where(profile, wings=wings, extra={**(where or {}), "profile": profile}, scopes=(scope,),
                         inherit=False)
        generation = str(self.generation()) if self.backend == "embedded" else None
        try:
            return index.filling(self.location, sorted(slots), flt, limit, generation) or []
        except (ValueError, AutomemError):
            return []

    def _query(self, embedding: Sequence[float], n: int, where: dict | None = None,
               ids_only: bool = False) -> list[tuple[Any, float]]:
        """One Chroma vector query: the `n` nearest (filtered by `where` when given) as (memory, cosine distance),
        or with `ids_only` as (id, distance) without reading documents or metadata."""
        include = ["distances"] if ids_only else ["documents", "metadatas", "distances"]
        with self._thread_lock:
            try:
                res = self.collection.query(query_embeddings=[list(embedding)], n_results=n, where=where or None,
                                            include=include)
            except Exception as exc:
                raise self._failure("search failed", exc) from None
            self._tidy_after_read()
        if ids_only:
            return [(i, float(dist)) for i, dist in zip(res["ids"][0], res["distances"][0])]
        return [(Memory.read(i, d, m), float(dist)) for i, d, m, dist in
                zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])]

    def _nearest_by_index(self, embedding: Sequence[float], k: int, flt: dict) -> list[tuple[Memory, float]] | None:
        """The k nearest memories passing `flt`, with visibility read from the recall index: Chroma's unfiltered
        query for ids and distances only, then the records of the first k visible ones. Reading metadata is most of
        a query's cost (at 100k memories: 160 ids 4 ms, with their metadata 35 ms; a filtered query 0.3-0.6 s),
        so the cost no longer follows the pool's size or the store's. Exact: every visible memory nearer than the
        k-th visible hit is among the hits; Chroma's filtered query when even WIDE_POOL neighbours hold too few.
        None when the index cannot answer (the caller reads metadata instead)."""
        from . import index

        if not index.is_fresh(self.location, self.generation()):
            return None  # a reader rebuilds it (recall does, first); a write never waits for that
        pool: int | None = max(SEARCH_POOL, 4 * k)
        few = index.matching_ids(self.location, flt, pool)
        if few is not None:  # no more pass the filter than the first query would read: those, by their vectors
            try:
                return self._nearest_of(embedding, k, few, flt)
            finally:
                # as after a query: whatever loaded the vector index since a forget's reopen may have persisted it
                # with this heap's leftovers (`Store._tidy_after_read`); a search leaves zeros there
                self._tidy_after_read()
        while pool is not None:
            hits = self._query(embedding, pool, ids_only=True)
            ok = index.visible_ids(self.location, [i for i, _ in hits], flt)
            if ok is None:
                return None
            chosen = [(i, d) for i, d in hits if i in ok]
            if len(chosen) >= k or len(hits) < pool:
                break
            pool = next_pool(pool, k, len(chosen), reads_metadata=False)
        else:
            return self._query(embedding, k, flt)
        chosen = chosen[:k]
        records = self.get([i for i, _ in chosen])
        if len(records) != len(chosen) or not all(matches(m.metadata(), flt) for m in records):
            return None  # the index and the store disagree (a write in flight): read the store's own metadata
        return [(m, d) for m, (_, d) in zip(records, chosen)]

    def recall(self, query: str, *, k: int = 5, profile: str | None = None, wing: str | None = None,
               wings: Iterable[str] | None = None, where: dict | None = None,
               scopes: Sequence[str] | None = (OWNER,)) -> list[tuple[Memory, float]]:
        """What a person asking `query` should be shown: the nearest memories and the recall index's keyword
        matches, fused and re-ranked by shared concepts (`automem.core.ranking.fuse`). The one ranking of search,
        prefetch, the tools and kanban recall. The write path keeps using plain `search`: its decisions are about
        distance."""
        from . import index
        from .ranking import fuse

        if not query or not query.strip():
            return []
        query = index.bound_query(query)  # a pasted log costs what a long question costs
        pool = max(self.config.recall_pool, k)
        embedding = self.embed([query])[0]
        indexed = False
        if self.config.recall_keyword_weight > 0:
            try:
                self.ensure_index()  # before the vector half: it reads visibility there too
                indexed = True
            except AutomemError:  # no index: the vector half alone; a server's index that could not sync: as is
                indexed = self.backend == "server" and index.index_path(self.location).exists()
        vector_hits = self.search(embedding=embedding, k=pool, profile=profile, wing=wing, wings=wings, where=where,
                                  scopes=scopes)
        if self.backend == "server":  # a race's loser, still active on the server, is not shown (convergence)
            lost = index.raced(self.location, [m.id for m, _ in vector_hits])
            vector_hits = [(m, d) for m, d in vector_hits if m.id not in lost]
        keyword_hits: list[tuple[Memory, float, float]] = []
        if indexed:
            try:
                flt = self.where(profile, wing=wing, wings=wings, extra=where, scopes=scopes)
                found, weights = index.keyword_search(self.location, query, flt, limit=pool)
            except (ValueError, AutomemError):
                found, weights = [], {}  # a filter the index cannot express: the vector half alone
            keyword_hits = self._with_distances(found, embedding, {m.id: d for m, d in vector_hits})
        else:
            weights = {}
        return fuse(query, vector_hits, keyword_hits, lambda m: m.id, lambda m: m.text, k,
                    self.config.recall_keyword_weight, self.config.recall_rerank_weight,
                    coverage=lambda text: index.coverage(weights, text))

    def _nearest_of(self, embedding: Sequence[float], k: int, ids: Sequence[str],
                    flt: dict) -> list[tuple[Memory, float]] | None:
        """The k of `ids` nearest to `embedding`; None when the store and the index disagree about one (a write in
        flight)."""
        records, dists = self._read_with_distances(ids, embedding)
        if len(records) != len(ids) or not all(matches(m.metadata(), flt) for m in records):
            return None
        return sorted(zip(records, dists), key=lambda pair: pair[1])[:k]

    def _with_distances(self, found, embedding, known: dict[str, float]) -> list[tuple[Memory, float, float]]:
        """Keyword hits (index items, BM25) as (memory, BM25, cosine distance to `embedding`)."""
        records, dists = self._read_with_distances([item.id for item, _ in found], embedding)
        read = {m.id: (m, d) for m, d in zip(records, dists)}
        return [(read[item.id][0], score, known.get(item.id, read[item.id][1])) for item, score in found
                if item.id in read and read[item.id][0].status == "active"]

    def _read_with_distances(self, ids: Sequence[str], embedding) -> tuple[list[Memory], list[float]]:
        """The records of `ids` the store holds and their cosine distances to `embedding` (as Chroma's, on the
        store's unit vectors), in one read of documents, metadata and vectors."""
        import numpy as np

        if not ids:
            return [], []
        with self._thread_lock:
            res = self._read("read", lambda: self.collection.get(
                ids=list(ids), include=["documents", "metadatas", "embeddings"]))
        records = [Memory.read(i, d, m) for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])]
        if not records:
            return [], []
        dists = 1.0 - np.asarray(res["embeddings"], dtype=np.float32) @ np.asarray(embedding, dtype=np.float32)
        return records, [float(d) for d in dists]


def next_pool(pool: int, k: int, visible: int, *, reads_metadata: bool) -> int | None:
    """How many nearest neighbours the next unfiltered query asks for, when `visible` of the `pool` nearest passed
    the filter and k are wanted: twice what the visible share seen suggests, at most WIDE_POOL. None: Chroma's
    filtered query answers instead (its cost follows how many memories the filter matches: 0.3-0.6 s at 100k for
    one profile's share) - past WIDE_POOL, and, where each neighbour's metadata is read (most of a query's cost),
    as soon as the share seen is nil or asks for more than WIDE_POOL."""
    if pool >= WIDE_POOL:
        return None
    wider = math.ceil(2 * pool * k / visible) if visible else WIDE_POOL + 1
    if reads_metadata and wider > WIDE_POOL:
        return None
    return min(WIDE_POOL, wider)
