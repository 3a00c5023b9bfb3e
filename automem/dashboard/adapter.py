"""The Memory tab's one way into automem: every function the tab's backend calls on memories, the spool and the
log lives here, each a thin call to what the CLI uses: the Python API (`automem.api.Memories`, over this process's
one Store) for a memory's detail (`show`, as `automem show`), pin / unpin, forget, `edit` (as `automem edit`) and the
review of held memories; `Store.recall` as `automem search`; the recall index's rows
as `automem list` (a page costs the same at 100,000 memories); the spool as `automem stats` and `drain
--retry-dead`.

One Store per process: two Chroma clients on one folder in one process share Chroma's cached system, so neither
would see other processes' writes after a reopen, and `forget` (which closes its client to VACUUM) could not close
the files. The Store is the one the CLI would open for the profile asked (its config: shared wings, recall
weights); a request for another profile reopens it, under the lock every request holds.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .. import errors
from ..api import Memories, MemoryView, Step
from ..config import load_config
from ..core import index
from ..core.memory import CATEGORY_OF_WING, OWNER
from ..core.store import Store
from ..errors import UsageError
from ..extract.spool import dead_jobs, pending_jobs, revive_dead
from ..log import last_events, log_event
from ..paths import Location, resolve_root_and_profile
from ..text import redact_secrets
from .queries import ListQuery, SearchQuery, View

# What the tab can offer today (the page hides or marks what is False here). Issue 27 (trust) brings the owner's
# confirmation of shared instructions to the tab.
CAPABILITIES = {"edit": True, "excerpt": True, "history_events": True, "share": False, "judge_pairs": True}
MAX_JOBS_SHOWN = 50


class NotFound(LookupError):
    """No such profile or memory (HTTP 404)."""


# -- where --------------------------------------------------------------------------------------------------------
def launch_location() -> Location:
    """The root and profile the dashboard was started for ($HERMES_HOME, else ~/.hermes)."""
    return Location.resolve()


def location_of(profile: str) -> Location:
    """`profile` of the dashboard's root; NotFound when the root has no such profile."""
    root, _ = resolve_root_and_profile(None)
    loc = Location(root, profile)
    if not loc.profile_home.is_dir():
        raise NotFound(f"no profile {profile!r} under {root}")
    return loc


def profiles(root: Path) -> list[str]:
    """`default` plus every profile folder under `<root>/profiles/` (as `automem install --all-profiles`)."""
    names = ["default"]
    folder = root / "profiles"
    if folder.is_dir():
        names += sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    return names


# -- the store ----------------------------------------------------------------------------------------------------
class Stores:
    """The one Store this process keeps (see the module docstring), reopened when the profile or its settings
    change. Every use holds the lock: requests take turns."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._store: Store | None = None
        self._key: tuple | None = None

    @staticmethod
    def _key_of(loc: Location) -> tuple:
        stamps = []
        for path in (loc.root / "config.yaml", loc.profile_home / "config.yaml", loc.profile_home / ".env"):
            try:
                st = path.stat()
                stamps.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append(None)
        return (str(loc.root), loc.profile, tuple(stamps))

    @contextmanager
    def use(self, loc: Location) -> Iterator[Store]:
        with self._lock:
            key = self._key_of(loc)
            if self._store is None or key != self._key:
                self.close()
                self._store = Store(loc, load_config(loc))
                self._key = key
            yield self._store

    def close(self) -> None:
        with self._lock:
            store, self._store, self._key = self._store, None, None
            if store is not None:
                store.close()


STORES = Stores()


# -- shapes -------------------------------------------------------------------------------------------------------
def _shown(text: str | None) -> str | None:
    """A memory's words as the page shows them: secrets redacted on the way out, as `automem export` does (a
    memory stored before a pattern existed must not reach a screen or a screenshot)."""
    return None if text is None else redact_secrets(text)


def row_of(item: Any, status: str = "active") -> dict:
    """A list row from a Memory or a recall-index item."""
    return {"id": item.id, "text": _shown(item.text), "category": CATEGORY_OF_WING.get(item.wing, item.wing),
            "wing": item.wing, "profile": item.profile, "scope": item.scope or OWNER,
            "pinned": bool(item.pinned), "status": getattr(item, "status", status) or status,
            "created_at": int(item.created_at or 0), "updated_at": int(item.updated_at or 0),
            "room": item.room or "", "restated": int(item.restated or 0)}


def view_row(v: MemoryView) -> dict:
    """A list row from the API's view of a memory."""
    rec = v.to_json()
    return {"id": v.id, "text": _shown(v.text), "category": v.category, "wing": rec.get("wing", ""),
            "profile": v.profile, "scope": v.scope or OWNER, "pinned": v.pinned, "status": v.status,
            "created_at": v.created_at, "updated_at": v.updated_at, "room": rec.get("room") or "",
            "restated": v.restated}


def tombstone_row(t: dict) -> dict:
    """A forgotten memory: its id and where it was, never its words."""
    wing = t.get("wing", "")
    return {"id": t["id"], "text": None, "category": CATEGORY_OF_WING.get(wing, wing), "wing": wing,
            "profile": t.get("profile", ""), "scope": t.get("scope", OWNER), "pinned": False, "status": "forgotten",
            "created_at": int(t.get("created_at") or 0), "updated_at": int(t.get("forgotten_at") or 0),
            "forgotten_at": int(t.get("forgotten_at") or 0), "room": t.get("room", ""), "restated": 0}


# -- reads --------------------------------------------------------------------------------------------------------
def list_memories(store: Store, q: ListQuery) -> dict:
    """One page of memories, newest first, as `automem list` (--all for superseded and forgotten ones) shows them
    for the view's profile and scope. Active ones are read from the recall index (a page costs the same at 100,000
    memories as at 100); superseded ones from the store; forgotten ones are tombstones (ids only)."""
    view = q.view
    pinned = None if q.pinned is None else {"pinned": 1 if q.pinned else 0}
    if q.status == "forgotten":
        rows = [tombstone_row(t) for t in store.tombstones()
                if t.get("profile") == view.profile and (q.wing is None or t.get("wing") == q.wing)
                and (view.scope is None or t.get("scope", OWNER) == view.scope) and not q.pinned]
        rows.sort(key=lambda r: (r["forgotten_at"], r["id"]), reverse=True)
        return {"items": rows[q.offset:q.offset + q.limit], "total": len(rows), "source": "tombstones"}
    if q.status == "active":
        store.ensure_index()  # what recall does first: a stale index is rebuilt once
        flt = store.where(view.profile, wing=q.wing, extra=pinned, scopes=view.scopes)
        got = index.page(store.location, flt, q.offset, q.limit)
        if got is not None:
            items, total = got
            return {"items": [row_of(i) for i in items], "total": total, "source": "index"}
        mems = store.list(view.profile, wing=q.wing, where=pinned, scopes=view.scopes)
    else:
        where = {"status": q.status, **(pinned or {})}
        mems = store.list(view.profile, wing=q.wing, include_hidden=True, where=where, scopes=view.scopes)
    return {"items": [row_of(m) for m in mems[q.offset:q.offset + q.limit]], "total": len(mems), "source": "store"}


def search_memories(store: Store, q: SearchQuery) -> dict:
    """What the agent would be shown for `q.query`: the same hybrid recall (`Store.recall`) as `automem search`."""
    hits = store.recall(q.query, k=q.k, profile=q.view.profile, wing=q.wing, scopes=q.view.scopes)
    return {"items": [{**row_of(m), "distance": round(float(d), 4)} for m, d in hits], "total": len(hits)}


def overview(store: Store, view: View) -> dict:
    """What the page's filters offer: the root's profiles, the scopes (people, chats) this profile holds memories
    of, and the active memories per category."""
    store.ensure_index()
    loc = store.location
    per_scope = index.scopes(loc, view.profile) or {}
    counts = index.counts(loc)
    owner = counts.get("owner", {}).get(view.profile, {})
    return {"profile": view.profile, "profiles": profiles(loc.root), "root": str(loc.root),
            "scopes": [{"scope": s, "memories": n} for s, n in sorted(per_scope.items())],
            "owner_by_category": {CATEGORY_OF_WING.get(w, w): n for w, n in sorted(owner.items())},
            "capabilities": dict(CAPABILITIES)}


def _api(store: Store, scope: str | None = None) -> Memories:
    """The Python API over this process's Store: the owner's (scope None), or speaking for a view's scope."""
    return Memories._over(store.location, lambda: store.config, lambda: store, scope=scope or None, by="dashboard")


def _step_row(step: Step) -> dict:
    """One link of a memory's chain (automem.api.Step) as a list row, with how it is linked and where that value was
    learned; a forgotten one keeps its id only."""
    if step.memory is None:
        return {"id": step.id, "text": None, "status": "forgotten" if step.forgotten_at else "unknown",
                "link": step.link, "at": step.at, "forgotten_at": step.forgotten_at or None}
    return {**view_row(step.memory), "link": step.link, "at": step.at, "reason": step.reason or None,
            "session_id": step.memory.session_id, "evidence": _evidence(step.memory)}


def _evidence(v: MemoryView) -> dict | None:
    """Where a memory was learned (automem.core.provenance.Evidence), its excerpt redacted on the way out; None when
    an older automem stored it without."""
    if v.evidence is None:
        return None
    return {**v.evidence.to_json(), "excerpt": _shown(v.evidence.excerpt) or None}


def _event_row(e) -> dict:
    out = e.to_json()
    if out.get("excerpt"):
        out["excerpt"] = _shown(out["excerpt"])
    return out


def memory_detail(store: Store, memory_id: str) -> dict:
    """One memory with its provenance, its events and its chain (`Memories.show`, as `automem show ID`, the owner's
    view: any memory of the root, like `automem list --all-profiles --all-users`); a forgotten one as its tombstone.
    NotFound for an unknown id, or one held for review (its own list is `held_items`)."""
    try:
        v = _api(store).show(memory_id)
    except errors.NotFound as exc:
        tomb = next(iter(store.tombstones_of([memory_id])), None)
        if tomb is None:
            raise NotFound(str(exc)) from None
        events = [{"memory_id": memory_id, "kind": "forgotten", "at": int(tomb.get("forgotten_at") or 0)}]
        return {"memory": tombstone_row(tomb), "provenance": None,
                "history": {"replaced": [], "replaced_by": [], "events": events}, "capabilities": dict(CAPABILITIES)}
    rec = v.to_json()
    evidence = _evidence(v)
    provenance = {
        "session_id": v.session_id, "task_id": v.task_id, "job": v.job,
        "origin": (v.evidence.origin if v.evidence else "") or rec.get("room") or None, "room": rec.get("room") or None,
        "added_by": v.added_by or None, "who": "owner" if v.scope == OWNER else v.scope,
        "created_at": v.created_at, "updated_at": v.updated_at, "restated": v.restated,
        "excerpt": evidence["excerpt"] if evidence else None, "evidence": evidence,
        "other": {k: x for k, x in sorted(v.extra.items()) if isinstance(x, (str, int, float, bool))},
    }
    hist = {"replaced": [_step_row(s) for s in v.replaced], "replaced_by": [_step_row(s) for s in v.replaced_by],
            "events": [_event_row(e) for e in v.events]}
    return {"memory": {**view_row(v), "superseded_by": v.superseded_by}, "provenance": provenance,
            "history": hist, "capabilities": dict(CAPABILITIES)}


# -- changes (the CLI's own functions) --------------------------------------------------------------------------
def set_pinned(store: Store, memory_id: str, view: View, value: bool) -> dict:
    api = _api(store, view.scope).with_profile(view.profile)
    [done] = (api.pin if value else api.unpin)(memory_id)
    return {"id": memory_id, "pinned": value, "changed": done.changed}


def forget(store: Store, memory_id: str) -> dict:
    """`automem forget ID`: every copy goes (the owner's dashboard forgets any memory, as the CLI without --user)."""
    changed = _api(store).forget(memory_id)
    return {"id": memory_id, "status": "forgotten", "changed": bool(changed.get(memory_id))}


# -- the owner's review of what the write path held back (automem.core.review, as `automem review`) ---------------
def held_items(store: Store, view: View) -> dict:
    """The memories held for review of the view's profile (and scope; every scope when it is None), newest first,
    each with why it was held (features, never words)."""
    api = _api(store, view.scope).with_profile(view.profile)
    items = api.review(all_users=view.scope is None)
    return {"items": [{**view_row(m), "reason": m.reason, "session_id": m.session_id, "task_id": m.task_id}
                      for m in items], "total": len(items)}


def accept_held(store: Store, memory_id: str) -> dict:
    """`automem review --accept ID`: stored through the write path as a normal memory (rules only: a page must not
    wait on an LLM judge)."""
    [d] = _api(store).accept_held(memory_id, judge=False)
    return {"accepted": memory_id, "decision": d.action, "id": d.id or d.matched_id, "reason": d.reason,
            "category": d.category}


def reject_held(store: Store, memory_id: str) -> dict:
    """`automem review --reject ID`: forgotten for good."""
    changed = _api(store).reject_held(memory_id)
    return {"id": memory_id, "status": "forgotten", "changed": bool(changed.get(memory_id))}


def edit(store: Store, memory_id: str, view: View, text: str) -> dict:
    """`automem edit ID TEXT`: the corrected text through the write path's checks becomes the active memory (the
    owner's dashboard corrects any memory, as the CLI without --user; with a scope, only that one's). A refused text
    is a UsageError (HTTP 409, one line): nothing changed."""
    found = store.get([memory_id])
    if not found or found[0].status == "forgotten":
        raise NotFound(f"no memory with id {memory_id} (a forgotten memory cannot be edited)")
    try:
        d = _api(store, view.scope).edit(memory_id, text)
    except errors.Refused as exc:
        raise UsageError(str(exc)) from None
    return {"decision": "corrected", "id": d.id, "corrects": memory_id, "reason": d.reason, "text": _shown(d.text),
            "category": d.category}


# -- the pipeline -----------------------------------------------------------------------------------------------
def _job_row(job, failed: bool) -> dict:
    return {"id": job.id, "profile": job.profile, "session_id": job.session_id or None,
            "task_id": job.task_id or None, "origin": job.origin, "created_at": job.created_at,
            "attempts": job.attempts, "next_attempt_at": job.next_attempt_at or None,
            "error": redact_secrets(job.last_error) if job.last_error else None, "failed": failed}


def _disk_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def health(store: Store) -> dict:
    """The pipeline, as `automem stats` and `doctor` see it: jobs waiting and failed (with their errors), the last
    extraction, the pairs waiting for the judge, and the store's size."""
    loc = store.location
    waiting, failed = pending_jobs(loc), dead_jobs(loc)
    last = last_events(loc, "job", 1)
    job = last[0] if last else None
    store.ensure_index()
    counts = index.counts(loc)
    active = sum(n for per in counts.get("owner", {}).values() for n in per.values()) + \
        sum(v.get("memories", 0) for v in counts.get("others", {}).values())
    return {
        "waiting": {"count": len(waiting), "jobs": [_job_row(j, False) for j in waiting[:MAX_JOBS_SHOWN]]},
        "failed": {"count": len(failed), "jobs": [_job_row(j, True) for j in failed[:MAX_JOBS_SHOWN]]},
        "last_extraction": None if job is None else {
            "at": job.get("ts"), "status": job.get("status"), "job": job.get("job"), "profile": job.get("profile"),
            "backend": job.get("backend"), "error": job.get("error") or None},
        "store": {"backend": store.backend, "active": active, "records": store.count(),
                  "forgotten": len(store.tombstones()),
                  "disk_bytes": _disk_bytes(loc.chroma_dir) + _disk_bytes(loc.automem_dir / "index")
                  if store.backend == "embedded" else None},
        # pairs the write path kept apart for lack of a judge: the next session's job (or `compact --judge`)
        # settles them; the whole root's, as `automem stats` counts them
        "judge_pairs": sum(index.count_waiting(loc).values()),
        "checked_at": time.time(),
    }


def retry_failed(root: Path, job_id: str | None = None) -> dict:
    """`automem drain --retry-dead` without waiting: the failed jobs (or the one named) go back into the spool with
    a fresh attempt budget, and the detached drainer the hooks start takes them (one per root at a time, draining
    one profile: the first revived job's; other profiles' jobs are taken by their next session's drainer)."""
    from ..extract.pipeline import spawn_detached_drainer

    loc = Location(root, "default")
    failed = {j.id: j for j in dead_jobs(loc)}
    if job_id is not None and job_id not in failed:
        raise NotFound(f"no failed job {job_id}")
    revived = revive_dead(loc, None if job_id is None else {job_id})
    owners = list(dict.fromkeys(failed[j].profile for j in revived if j in failed))
    pid = None
    if owners:
        pid = spawn_detached_drainer(Location(root, owners[0]))
    log_event(loc, "dashboard_retry", jobs=revived, drainer=pid)
    return {"revived": revived, "drainer_started": pid is not None, "profiles": owners}


__all__ = ["STORES", "Stores", "NotFound", "UsageError", "CAPABILITIES", "launch_location", "location_of", "profiles",
           "list_memories", "search_memories", "overview", "memory_detail", "set_pinned", "forget", "edit", "health",
           "retry_failed", "held_items", "accept_held", "reject_held"]
