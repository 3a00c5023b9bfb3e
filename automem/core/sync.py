"""Server mode: each machine's recall index follows the Chroma server by change.

On a Chroma server other machines write too, so a machine's recall index (`automem.core.index`) cannot be kept
current by its own writes alone. Every write stamps the record's `changed_at` (milliseconds, the writer's clock;
tombstones of forgotten memories too), and a sync asks the server only for what changed since the previous one
(`where changed_at >= cursor - margin`): new memories, superseded, forgotten, pinned, restated. A sync costs what
changed, not the store's size: the same at 100,000 memories as at 100.

- **The cursor** is this machine's clock when the previous sync began. Changes stamped up to
  `server_sync_margin_s` before it are read again, so a writer whose clock is behind (or whose request took long to
  land) is not missed; applying a record twice changes nothing. A sync during which something was forgotten keeps
  its cursor (a deletion can shift the pages being read), so the next one reads the same span again.
- **A full rebuild** (every record, paged) happens once: with no index, after an automem upgrade (records written
  before `changed_at` existed), or when the server's collection is another one (migrated, recreated).
- **Coverage**: a background sync (`reconcile=True`: the resident, the CLI, the dashboard) also compares the
  server's count with the ids the index knows; a gap makes it compare the ids themselves (at most every
  RECONCILE_EVERY_S), so a change missed by the clock is found anyway.
- **Forgotten words leave every machine**: a tombstone read by a sync drops the memory's row, rewrites the index
  file (`index.purge`) and takes the words out of this machine's log and spool (`erase.scrub_files`).
- **Never blocked**: `sync_within` runs a sync in a thread and waits at most `server_wait_s` for it; a server that
  is slow, down or hung leaves the index as it is (however old), logged with its age (`index_stale`), and
  `hermes memory status` says how old it is.

The reads are plain HTTP requests to Chroma's REST API (`ServerReader`), with no chromadb import: a Hermes process
syncs without loading chromadb.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Sequence
from urllib.parse import quote

from ..config import Config
from ..errors import StoreError, StoreUnavailable
from ..log import log_event
from ..paths import Location
from . import index
from .memory import Memory

PAGE = 1000  # records per read
ID_PAGE = 10000  # ids per read when comparing what the index covers
RECONCILE_EVERY_S = 300.0  # a coverage gap is looked into (every id compared) at most this often
FAILURE_LOG_EVERY_S = 600.0  # an unchanged sync error is logged again after this long
MEMORIES = "memories"  # automem.core.store.COLLECTION
TOMBSTONES = "forgotten"  # automem.core.forgetting.TOMBSTONES


# -- reading the server (plain REST) ---------------------------------------------------------------------------
class ServerReader:
    """Reads of one tenant/database over Chroma's REST API (`/api/v2`), on one kept-alive connection."""

    def __init__(self, config: Config, timeout: float | None = None):
        from .server import target_of

        self.config = config
        self.target = target_of(config)
        self.timeout = float(timeout if timeout is not None else config.chroma_timeout)
        self._conn: http.client.HTTPConnection | None = None
        t = self.target
        self._base = f"/api/v2/tenants/{quote(t.tenant, safe='')}/databases/{quote(t.database, safe='')}/collections"

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            t = self.target
            if t.ssl:
                self._conn = http.client.HTTPSConnection(t.host, t.port, timeout=self.timeout,
                                                         context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(t.host, t.port, timeout=self.timeout)
        return self._conn

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body) of one request; StoreUnavailable when no answer came."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json", **self.target.headers}
        for attempt in (1, 2):  # a kept-alive connection the server closed meanwhile is opened again, once
            try:
                conn = self._connection()
                conn.request(method, self._base + path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self.close()
                if attempt == 2:
                    raise self._unanswered(exc) from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise self._unanswered(exc) from None
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            decoded = raw[:200].decode("utf-8", "replace")
        if resp.status >= 500:
            raise StoreUnavailable(f"the Chroma server at {self.target.url} answered HTTP {resp.status}")
        if resp.status in (401, 403):
            from .server import Answer, refused_line

            raise StoreError(refused_line(self.target, Answer(resp.status, decoded)))
        return resp.status, decoded

    def _unanswered(self, exc: BaseException) -> StoreUnavailable:
        why = f"no answer within {self.timeout:.0f} s" if isinstance(exc, (socket.timeout, TimeoutError)) else (
            f"{exc.__class__.__name__}: {exc}")
        return StoreUnavailable(f"cannot reach the Chroma server at {self.target.url} ({why})")

    def collection_id(self, name: str, check_missing: bool = True) -> str | None:
        """The id of collection `name`, None when it does not exist (yet). Chroma answers a missing database the
        same way as a missing collection, so that answer is checked (a typo in chroma_database must not read as an
        empty store)."""
        status, body = self.call("GET", f"/{quote(name, safe='')}")
        if status == 200 and isinstance(body, dict) and body.get("id"):
            return str(body["id"])
        if status in (400, 404) and not check_missing:  # the database is known to exist (memories are in it)
            return None
        from .server import diagnose, unanswered

        problem = diagnose(self.target, timeout=self.timeout)
        if problem is not None:
            raise (StoreUnavailable if unanswered(problem) else StoreError)(problem)
        if status in (400, 404):
            return None
        raise StoreError(f"cannot read collection `{name}` on {self.target.url}: HTTP {status} {str(body)[:200]}")

    def get(self, cid: str, *, where: dict | None = None, ids: Sequence[str] | None = None,
            limit: int | None = None, offset: int | None = None, include: Sequence[str] = ()) -> dict:
        body: dict[str, Any] = {"include": list(include)}
        if where:
            body["where"] = where
        if ids is not None:
            body["ids"] = list(ids)
        if limit is not None:
            body["limit"] = int(limit)
        if offset:
            body["offset"] = int(offset)
        status, out = self.call("POST", f"/{cid}/get", body)
        if status != 200 or not isinstance(out, dict):
            raise StoreError(f"read failed on {self.target.url}: HTTP {status} {str(out)[:200]}")
        return out

    def pages(self, cid: str, *, where: dict | None = None, include: Sequence[str] = ("documents", "metadatas"),
              page: int = PAGE) -> Iterator[dict]:
        offset = 0
        while True:
            res = self.get(cid, where=where, limit=page, offset=offset, include=include)
            yield res
            if len(res.get("ids") or []) < page:
                return
            offset += page

    def count(self, cid: str) -> int:
        status, out = self.call("GET", f"/{cid}/count")
        if status != 200:
            raise StoreError(f"count failed on {self.target.url}: HTTP {status} {str(out)[:200]}")
        return int(out)


def _memories(res: dict) -> list[Memory]:
    docs = res.get("documents") or [None] * len(res["ids"])
    metas = res.get("metadatas") or [None] * len(res["ids"])
    return [Memory.from_record(i, d, m) for i, d, m in zip(res["ids"], docs, metas)]


def _tombstones(res: dict) -> list[tuple[str, int]]:
    metas = res.get("metadatas") or [None] * len(res["ids"])
    return [(i, int((m or {}).get("changed_at") or 0)) for i, m in zip(res["ids"], metas)]


# -- one sync ----------------------------------------------------------------------------------------------------
@dataclass
class SyncReport:
    """What a sync did (all zero when the index was fresh enough: `fresh`)."""

    fresh: bool = False
    full: bool = False
    read: int = 0  # records read (changed ones, or all on a full rebuild)
    tombstones: int = 0
    applied: int = 0  # index rows put or dropped
    forgotten: int = 0  # memories dropped because another machine forgot them
    skipped: int = 0  # records this machine wrote while the sync read
    gap: int = 0  # server count minus the ids the index knows, when they differ
    reconciled: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def identity(config: Config, cid: str) -> str:
    """What the index follows: the server, tenant, database and the collection's id (a new id: rebuild)."""
    from .server import target_of

    t = target_of(config)
    return f"{t.url}|{t.tenant}|{t.database}|{cid}"


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _process_lock(location: Location) -> threading.Lock:
    key = str(index.index_path(location))
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def sync(location: Location, config: Config, *, force: bool = False, reconcile: bool = False, full: bool = False,
         reader: ServerReader | None = None) -> SyncReport:
    """Bring the recall index of `location` up to the server (see the module docstring). Skipped when the last sync
    is younger than `server_sync_s` (unless `force`). Raises StoreError / StoreUnavailable when the server cannot
    be read; the failure is noted in the index (`sync_error`) for `hermes memory status`. `full`: every record read
    again (`automem repair`)."""
    from filelock import FileLock

    if not config.chroma_url:
        raise ValueError("sync is for a Chroma server (chroma_url)")
    t0 = time.monotonic()

    def fresh_enough() -> bool:
        meta = index.meta_of(location)
        return (not force and meta.get("generation") == index.SERVER_STAMP
                and time.time() - index.synced_at(meta) < config.server_sync_s)

    if fresh_enough():
        return SyncReport(fresh=True)
    own = reader is None
    reader = reader or ServerReader(config)
    index.index_path(location).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with _process_lock(location), FileLock(str(index.index_path(location).with_name("sync.lock")), mode=0o600):
            if fresh_enough():  # another process or thread synced while this one waited
                return SyncReport(fresh=True)
            try:
                report = _sync_locked(location, config, reader, reconcile, full)
            except StoreError as exc:
                _note_failure(location, exc)
                raise
    finally:
        if own:
            reader.close()
    report.seconds = time.monotonic() - t0
    if report.full or report.read or report.tombstones or report.reconciled or report.gap:
        log_event(location, "index_sync", **report.to_json())
    return report


def _sync_locked(location: Location, config: Config, reader: ServerReader, reconcile: bool,
                 full: bool = False) -> SyncReport:
    report = SyncReport()
    started = time.time()
    started_ms = int(started * 1000)
    meta = index.meta_of(location)
    cid = meta.get("memories_id") or reader.collection_id(MEMORIES)
    if cid is None:  # nothing was ever stored on this database: an empty index
        index.rebuild(location, [], index.SERVER_STAMP, meta={"synced_at": str(started), "sync_cursor": "0",
                                                              "sync_error": ""})
        report.full = True
        return report
    ident = identity(config, cid)
    if full or meta.get("generation") != index.SERVER_STAMP or meta.get("server") != ident or not meta.get(
            "sync_cursor"):
        return _full(location, config, reader, cid, started, report)
    since = int(meta["sync_cursor"]) - int(config.server_sync_margin_s * 1000)
    where = {"changed_at": {"$gte": since}}
    try:
        changed = [m for res in reader.pages(cid, where=where) for m in _memories(res)]
    except StoreError:
        if meta.get("memories_id"):  # the collection may have been replaced: look it up again next time
            index.note_meta(location, {"memories_id": ""})
        raise
    tomb_id = meta.get("tombstones_id") or reader.collection_id(TOMBSTONES, check_missing=False)
    tombs = ([t for res in reader.pages(tomb_id, where=where, include=("metadatas",)) for t in _tombstones(res)]
             if tomb_id else [])
    report.read, report.tombstones = len(changed), len(tombs)
    # A forget during the reads may have shifted the pages (a deleted record moves the ones after it): the next
    # sync reads this span again.
    cursor = meta["sync_cursor"] if any(c >= started_ms for _, c in tombs) else str(started_ms)
    applied = index.sync_apply(location, changed, tombs, started_at=started, expect={"server": ident},
                               meta={"sync_cursor": cursor, "synced_at": str(started), "sync_error": "",
                                     "sync_failed_since": "", "memories_id": cid, "tombstones_id": tomb_id or ""})
    if applied is None:  # rebuilt by another process meanwhile
        return report
    report.applied, report.skipped = applied.put + applied.dropped, applied.skipped
    _after_forgets(location, applied.forgotten_texts, report)
    if reconcile:
        _check_coverage(location, reader, cid, ident, report)
    return report


def _full(location: Location, config: Config, reader: ServerReader, cid: str, started: float,
          report: SyncReport) -> SyncReport:
    """Every record, paged, into a new index: the first sync, an upgrade, another collection."""
    records: list[Memory] = []
    for res in reader.pages(cid):
        records += _memories(res)
    tomb_id = reader.collection_id(TOMBSTONES, check_missing=False) or ""
    report.full, report.read = True, len(records)
    report.applied = index.rebuild(location, records, index.SERVER_STAMP, meta={
        "server": identity(config, cid), "memories_id": cid, "tombstones_id": tomb_id,
        "sync_cursor": str(int(started * 1000)), "synced_at": str(started), "sync_error": "", "sync_failed_since": "",
        "reconciled_at": str(started)})
    if index.meta_of(location).get("purge") == "1":
        index.purge(location)
    return report


def _after_forgets(location: Location, texts: Sequence[str], report: SyncReport) -> None:
    """Memories another machine forgot left the rows: their words leave the index file and this machine's files."""
    report.forgotten = len(texts)
    if texts or index.meta_of(location).get("purge") == "1":
        index.purge(location)
    if texts:
        from .erase import scrub_files

        scrub_files(location, texts)


def _check_coverage(location: Location, reader: ServerReader, cid: str, ident: str, report: SyncReport) -> None:
    """The server's count against the ids the index knows; on a gap, every id compared (at most every
    RECONCILE_EVERY_S): missing records are read, records gone from the server dropped."""
    total = reader.count(cid)
    seen = index.covered(location)
    have = seen[1] if seen is not None else None
    if have is None or have == total:
        if index.meta_of(location).get("gap"):
            index.note_meta(location, {"gap": ""})
        return
    report.gap = total - have
    meta = index.meta_of(location)
    try:
        last = float(meta.get("reconciled_at") or 0)
    except ValueError:
        last = 0.0
    if time.time() - last < RECONCILE_EVERY_S:
        index.note_meta(location, {"gap": str(report.gap)})
        return
    started = time.time()
    on_server: set[str] = set()
    for res in reader.pages(cid, include=(), page=ID_PAGE):
        on_server.update(res["ids"])
    known = index.known_ids(location) or set()
    missing = sorted(on_server - known)
    records: list[Memory] = []
    for start in range(0, len(missing), PAGE):
        records += _memories(reader.get(cid, ids=missing[start:start + PAGE], include=("documents", "metadatas")))
    gone = [(i, 0) for i in sorted(known - on_server)]
    applied = index.sync_apply(location, records, gone, started_at=started, expect={"server": ident},
                               meta={"reconciled_at": str(started), "gap": ""})
    report.reconciled = True
    if applied is not None:
        report.applied += applied.put + applied.dropped
        _after_forgets(location, applied.forgotten_texts, report)


def _note_failure(location: Location, exc: BaseException) -> None:
    """The index says why it could not sync and since when; the log says it once (again after a while)."""
    line = str(exc).splitlines()[0][:300] if str(exc) else exc.__class__.__name__
    meta = index.meta_of(location)
    now = time.time()
    try:
        since = float(meta.get("sync_failed_since") or 0) or now
        logged = float(meta.get("sync_failure_logged") or 0)
    except ValueError:
        since, logged = now, 0.0
    if meta.get("sync_error") == line and now - logged < FAILURE_LOG_EVERY_S:
        index.note_meta(location, {"sync_failed_at": str(now)})
        return
    index.note_meta(location, {"sync_error": line, "sync_failed_at": str(now), "sync_failed_since": str(since),
                               "sync_failure_logged": str(now)})
    log_event(location, "index_sync_failed", error=line, failing_for_s=round(now - since, 1),
              index_age_s=round(now - index.synced_at(meta), 1) if index.synced_at(meta) else None)


# -- never blocked: a sync within a budget ---------------------------------------------------------------------
@dataclass
class Freshness:
    """How current the index a session answers from is."""

    synced: bool  # the last sync is younger than server_sync_s (now, or already)
    age_s: float | None  # seconds since the index last reflected the server (None: it never did)
    error: str = ""  # why the last sync failed, if it did


_threads: dict[str, tuple[threading.Thread, float]] = {}  # index path -> (its sync thread, started: monotonic)
_threads_guard = threading.Lock()


def _background(location: Location, config: Config) -> None:
    try:
        sync(location, config)
    except Exception as exc:  # noqa: BLE001 - noted in the index and the log by `sync`; a thread never raises
        if not isinstance(exc, StoreError):
            _note_failure(location, exc)


def sync_within(location: Location, config: Config, budget: float | None = None) -> Freshness:
    """What a Hermes session calls before it answers from the index: a sync when the index is older than
    `server_sync_s`, waited for at most `budget` seconds (`server_wait_s`). A sync still running then goes on in
    its thread (one per index and process); the session answers from the index as it is, and the log says how old
    it is (`index_stale`). Never raises."""
    budget = config.server_wait_s if budget is None else budget
    meta = index.meta_of(location)
    now = time.time()
    if meta.get("generation") == index.SERVER_STAMP and now - index.synced_at(meta) < config.server_sync_s:
        return Freshness(True, now - index.synced_at(meta))
    waited = time.monotonic()
    key = str(index.index_path(location))
    with _threads_guard:
        thread, since = _threads.get(key, (None, 0.0))
        if thread is None or not thread.is_alive():
            thread, since = threading.Thread(target=_background, args=(location, config), name="automem-sync",
                                             daemon=True), waited
            _threads[key] = (thread, since)
            thread.start()
    # A sync that has already run longer than the budget (a hung server) is not waited for again.
    thread.join(max(0.0, budget - (waited - since)))
    meta = index.meta_of(location)
    at = index.synced_at(meta)
    age = (time.time() - at) if at else None
    fresh = age is not None and age < config.server_sync_s + budget + 1.0
    if not fresh:
        log_event(location, "index_stale", age_s=round(age, 1) if age is not None else None,
                  waited_ms=round((time.monotonic() - waited) * 1000, 1), still_syncing=thread.is_alive(),
                  error=meta.get("sync_error", ""))
    return Freshness(fresh, age, meta.get("sync_error", ""))


def staleness(location: Location, config: Config, now: float | None = None) -> dict:
    """For `hermes memory status`: {"age_s", "synced_at", "error", "failing_since"} of a server index."""
    meta = index.meta_of(location)
    now = time.time() if now is None else now
    at = index.synced_at(meta)
    out: dict[str, Any] = {"synced_at": at, "age_s": (now - at) if at else None, "error": meta.get("sync_error", "")}
    if out["error"]:
        try:
            out["failing_since"] = float(meta.get("sync_failed_since") or 0)
        except ValueError:
            out["failing_since"] = 0.0
    return out
