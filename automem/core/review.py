"""The owner's review of what the write path held back: injection-shaped candidates from a conversation.

Refusing would drop them, and a legit way of working the classifier misread would be a lost fact. So the write path
holds them (automem.core.write_path: status "held", id `automem.core.memory.held_id`), where no reader shows them
(the system block, prefetch, search, list, sharing, the kanban block, the dashboard's views) and no write decision
counts them. The owner settles each one here, through the CLI (`automem review`), and later the Memory tab:

    held_memories(store, profile=None, scope=None)  # what waits, newest first; held_reason(m) says why
    accept(store, ids)   # store each through the write path, as a normal memory (its provenance kept)
    reject(store, ids)   # forget each for good (`Store.forget`: every copy; the tombstone keeps it from coming back)

Plain functions over a Store; a refusal is a UsageError with one line. Logged by id, never by words.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import NotFound, UsageError
from ..log import log_event
from .instructions import injection_reason
from .memory import HELD, HELD_FEATURES, HELD_IN_USER_WORDS, HELD_KEYS, Memory


def held_memories(store, profile: str | None = None, scope: str | None = None) -> list[Memory]:
    """The memories held for review (of `profile` and `scope`, or every one), newest first."""
    where: list[dict] = [{"status": HELD}]
    if profile is not None:
        where.append({"profile": profile})
    if scope is not None:
        where.append({"scope": scope})
    items = list(store.iter_records(where=where[0] if len(where) == 1 else {"$and": where}))
    items.sort(key=lambda m: (m.updated_at or m.created_at, m.created_at, m.id), reverse=True)
    return items


def held_reason(memory: Memory) -> str:
    """Why `memory` was held: the classifier's features (never its words)."""
    features = [f for f in str(memory.extra.get(HELD_FEATURES) or "").split(",") if f]
    return injection_reason(features or ["no features recorded"])


def _held(store, ids: Sequence[str], verb: str) -> list[Memory]:
    """The held memories `ids` names; UsageError (nothing changed) when one is not held."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise UsageError(f"give the ids to {verb} (see `automem review`)")
    found = {m.id: m for m in store.get(ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"no memory held for review with id {', '.join(missing)} (see `automem review`)")
    other = [i for i in ids if found[i].status != HELD]
    if other:
        raise UsageError(f"{', '.join(other)} {'is' if len(other) == 1 else 'are'} not held for review (`automem "
                         f"list` shows stored memories)")
    return [found[i] for i in ids]


def candidate_of(memory: Memory):
    """The write path's candidate for a held memory the owner accepted: its words, wing, profile, scope and
    provenance (room, session, task, job) as they were learned, marked reviewed (not screened for injection again;
    the screening's other steps, personal facts and the user's own words, still apply)."""
    from .provenance import Evidence
    from .write_path import EVENT_ROOMS, Candidate

    evidence = Evidence.of(memory)  # where it was said goes with it (provenance kept)
    words = {"yes": True, "no": False}.get(str(memory.extra.get(HELD_IN_USER_WORDS) or ""))
    extra = {k: v for k, v in memory.extra.items() if k not in HELD_KEYS}
    # An event record (a kanban run) keeps its own id: held_id("m_<hex>") is "h_<hex>".
    event_id = "m_" + memory.id[2:] if memory.room in EVENT_ROOMS and memory.id.startswith("h_") else ""
    return Candidate(text=memory.text, wing=memory.wing, profile=memory.profile, room=memory.room or "tool",
                     scope=memory.scope, added_by=memory.added_by, session_id=memory.session_id,
                     task_id=memory.task_id, job=memory.job, extra=extra, id=event_id, in_user_words=words,
                     reviewed=True, evidence=evidence if evidence.recorded else None)


def accept(store, ids: Sequence[str], judge=None, by: str = "") -> list:
    """Store held memories through the write path as normal memories (a Decision each, in order), then take the held
    copies out. `by` names who accepted (cli, dashboard) for the log."""
    from .write_path import remember

    held = _held(store, ids, "accept")
    decisions = remember(store, [candidate_of(m) for m in held], judge=judge)
    store.drop_held([m.id for m in held])
    log_event(store.location, "review", by=by, accepted=[m.id for m in held],
              stored=[d.id or d.matched_id for d in decisions], decisions=[d.action for d in decisions])
    return decisions


def reject(store, ids: Sequence[str], by: str = "") -> dict[str, bool]:
    """Forget held memories for good (`Store.forget`: every copy goes, and the tombstone keeps automatic sources from
    holding the same words again). {id: forgotten now}."""
    held = _held(store, ids, "reject")
    changed = set(store.forget([m.id for m in held]))
    log_event(store.location, "review", by=by, rejected=[m.id for m in held])
    return {m.id: m.id in changed for m in held}


__all__ = ["held_memories", "held_reason", "candidate_of", "accept", "reject", "HELD"]
