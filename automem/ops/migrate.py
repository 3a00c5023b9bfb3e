"""`automem migrate --to URL|PATH`: copy the configured store to a Chroma server, or back to an embedded store.

The copy is raw and lossless: every id, document, metadata key (automem's and any other) and the stored vector
go over as they are (no re-embedding, so the target answers searches exactly as the source did), active and
superseded alike. It is then read back and compared record by record. Forgotten memories are not copied: their
tombstones are (ids and hashes, no words), so automatic sources cannot bring them back on the target either; a
record an older automem kept with status `forgotten` becomes a tombstone there, its words left behind.

Targets:
- `http(s)://host:port`: a Chroma server, with this config's token, tenant and database (or `--tenant` /
  `--database`). The tenant and database are created when absent: this is the one command that creates them
  (an ordinary open refuses, so a typo cannot start an empty second memory).
- a path: a Hermes root (the folder that holds `profiles/`; a profile's home `<root>/profiles/<name>` means its
  root), or that root's `automem/chroma` folder. The embedded store there is created if absent.

A target that already holds memories is refused unless `merge=True` (then records with the same id are replaced
by the source's). Migrating does not change any config.yaml: point `automem.chroma_url` at the server (or remove
it) afterwards.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import StoreError, UsageError
from ..paths import Location, resolve_root_and_profile

PAGE = 1000
BATCH = 500  # records per write; well under a Chroma server's max_batch_size (5461 for 1.5.9)


@dataclass
class RawRecord:
    id: str
    document: str
    metadata: dict
    embedding: Sequence[float] | None


def iter_raw(collection: Any, where: dict | None = None, page: int = PAGE, embeddings: bool = True,
             ids: Sequence[str] | None = None) -> Iterator[RawRecord]:
    """Every record of a Chroma collection (or of `ids`) as stored, in pages."""
    include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
    if ids is not None:
        for start in range(0, len(ids), page):
            yield from _records(collection.get(ids=list(ids[start:start + page]), include=include), embeddings)
        return
    offset = 0
    while True:
        res = collection.get(where=where or None, limit=page, offset=offset, include=include)
        got = res.get("ids") or []
        yield from _records(res, embeddings)
        if len(got) < page:
            return
        offset += page


def _records(res: dict, embeddings: bool) -> Iterator[RawRecord]:
    embs = res.get("embeddings") if embeddings else None
    for n, rid in enumerate(res.get("ids") or []):
        vec = None
        if embs is not None and len(embs) > n and embs[n] is not None:
            vec = [float(x) for x in embs[n]]
        yield RawRecord(rid, (res.get("documents") or [None])[n] or "", dict((res.get("metadatas") or [{}])[n] or {}),
                        vec)


def is_url(to: str) -> bool:
    return to.startswith(("http://", "https://"))


def target_of(to: str, location: Location, config, tenant: str | None = None,
              database: str | None = None) -> tuple[Location, Any]:
    """(location, config) of the store `--to` names; the config keeps everything but where the store is."""
    if is_url(to):
        cfg = dataclasses.replace(config, chroma_url=to, chroma_tenant=tenant or config.chroma_tenant,
                                  chroma_database=database or config.chroma_database)
        from ..core.server import target_of as server_target

        server_target(cfg)  # a malformed URL fails here, before anything is read
        return location, cfg
    if tenant or database:
        raise UsageError("--tenant and --database only go with --to URL")
    path = Path(to).expanduser().absolute()
    if path.name == "chroma" and path.parent.name == "automem":
        root = path.parent.parent
    else:
        root, _ = resolve_root_and_profile(path)
    if root.exists() and not root.is_dir():
        raise UsageError(f"--to {to}: not a folder")
    return Location(root=root, profile=location.profile), dataclasses.replace(config, chroma_url="")


def describe(store) -> str:
    if store.backend == "server":
        c = store.config
        return f"{c.chroma_url} (tenant {c.chroma_tenant}, database {c.chroma_database})"
    return str(store.location.chroma_dir)


def _same_store(a, b) -> bool:
    if a.backend != b.backend:
        return False
    if a.backend == "embedded":
        return a.location.chroma_dir.resolve() == b.location.chroma_dir.resolve()
    from ..core.server import target_of as server_target

    ta, tb = server_target(a.config), server_target(b.config)
    return (ta.host, ta.port, ta.tenant, ta.database) == (tb.host, tb.port, tb.tenant, tb.database)


@dataclass
class MigrateReport:
    source: str
    target: str
    copied: int = 0
    verified: int = 0
    mismatched: list[str] = field(default_factory=list)  # ids missing or different on the target
    target_before: int = 0
    target_after: int = 0
    created: list[str] = field(default_factory=list)  # tenant / database made on the server
    by_status: dict = field(default_factory=dict)
    forgotten: int = 0  # tombstones copied (no words)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatched and self.verified == self.copied

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["ok"] = self.ok
        out["seconds"] = round(self.seconds, 3)
        return out


def same_record(a: RawRecord, b: RawRecord, tolerance: float = 1e-6) -> bool:
    """Equal id, text and metadata, and the same vector (within float32 rounding)."""
    if a.id != b.id or a.document != b.document or a.metadata != b.metadata:
        return False
    if (a.embedding is None) != (b.embedding is None):
        return False
    if a.embedding is not None and b.embedding is not None:
        if len(a.embedding) != len(b.embedding):
            return False
        return all(abs(x - y) <= tolerance for x, y in zip(a.embedding, b.embedding))
    return True


def copy_records(source_collection: Any, target_collection: Any, batch: int = BATCH,
                 forgotten: list[RawRecord] | None = None) -> tuple[list[RawRecord], int]:
    """Upsert every source record into the target, but those with status `forgotten` (collected in `forgotten`,
    without their vectors). Returns the records copied (vectors dropped) and the count."""
    copied = 0
    seen: list[RawRecord] = []
    pending: list[RawRecord] = []

    def flush() -> None:
        nonlocal copied
        if not pending:
            return
        with_vec = [r for r in pending if r.embedding is not None]
        without = [r for r in pending if r.embedding is None]
        if without:  # cannot happen for automem's own writes; copying them would make the target embed
            raise StoreError(f"{len(without)} records have no stored vector (first: {without[0].id}); "
                             f"`automem export` and `import` re-embed them instead")
        target_collection.upsert(ids=[r.id for r in with_vec], documents=[r.document for r in with_vec],
                                 metadatas=[r.metadata or None for r in with_vec],
                                 embeddings=[list(r.embedding) for r in with_vec])
        copied += len(with_vec)
        pending.clear()

    for rec in iter_raw(source_collection):
        if rec.metadata.get("status") == "forgotten":
            if forgotten is not None:
                forgotten.append(RawRecord(rec.id, rec.document, rec.metadata, None))
            continue
        pending.append(rec)
        seen.append(RawRecord(rec.id, rec.document, rec.metadata, None))
        if len(pending) >= batch:
            flush()
    flush()
    return seen, copied


def verify(source_collection: Any, target_collection: Any, ids: Sequence[str]) -> tuple[int, list[str]]:
    """Read both sides back by id and compare every field; (equal count, ids that differ or are missing)."""
    bad: list[str] = []
    equal = 0
    for start in range(0, len(ids), PAGE):
        chunk = list(ids[start:start + PAGE])
        src = {r.id: r for r in iter_raw(source_collection, ids=chunk)}
        dst = {r.id: r for r in iter_raw(target_collection, ids=chunk)}
        for rid in chunk:
            if rid in dst and rid in src and same_record(src[rid], dst[rid]):
                equal += 1
            else:
                bad.append(rid)
    return equal, bad


def tombstones_of(source, legacy: Sequence[RawRecord]) -> list[dict]:
    """The source's tombstones, and one for each record an older automem kept as `forgotten` (no words)."""
    from ..core.forgetting import tombstone_metadata
    from ..core.memory import Memory

    out = {t["id"]: t for t in source.tombstones()}
    for rec in legacy:
        if rec.id not in out:
            meta = tombstone_metadata(Memory.from_record(rec.id, rec.document, rec.metadata),
                                      int(rec.metadata.get("updated_at") or time.time()))
            out[rec.id] = {"id": rec.id, **meta}
    return list(out.values())


def migrate(source, to: str, *, tenant: str | None = None, database: str | None = None, merge: bool = False,
            batch: int = BATCH) -> MigrateReport:
    """Copy `source` (a Store) to the store `to` names; see the module docstring."""
    from contextlib import ExitStack

    from ..core.store import Store

    t0 = time.monotonic()
    location, cfg = target_of(to, source.location, source.config, tenant, database)
    target = Store(location, cfg)
    try:
        if _same_store(source, target):
            raise UsageError(f"--to {to} is the store this config already uses ({describe(source)})")
        report = MigrateReport(source=describe(source), target=describe(target))
        if target.backend == "server":
            from ..core.server import ensure_database, target_of as server_target

            report.created = ensure_database(server_target(cfg), timeout=cfg.chroma_timeout)
        with ExitStack() as locks:
            # The embedded sides are locked so this machine's writers wait; a server has no such lock.
            if source.backend == "embedded":
                locks.enter_context(source.lock())
            if target.backend == "embedded":
                locks.enter_context(target.lock())
            report.target_before = int(target.collection.count())
            if report.target_before and not merge:
                raise UsageError(f"{report.target} already holds {report.target_before} memories: pass --merge to "
                                 f"copy into it anyway (records with the same id are replaced)")
            legacy: list[RawRecord] = []
            records, report.copied = copy_records(source.collection, target.collection, batch, legacy)
            if report.copied and target.backend == "embedded":
                target._wrote()  # other processes on that root reopen and see the copy
            report.forgotten = target.write_tombstones(tombstones_of(source, legacy))
            report.verified, report.mismatched = verify(source.collection, target.collection,
                                                        [r.id for r in records])
            report.target_after = int(target.collection.count())
            for r in records:
                status = str(r.metadata.get("status", "active"))
                report.by_status[status] = report.by_status.get(status, 0) + 1
    finally:
        target.close()
    report.seconds = time.monotonic() - t0
    from ..log import log_event

    log_event(source.location, "migrate", **report.to_json())
    return report
