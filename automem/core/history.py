"""A memory's history: the events that made it what it is, and `show` (the memory, where it was learned, the values
it replaced and what replaced it). The one way to read and write history: the write path, compact, pin, the CLI, the
Hermes tools and the dashboard call these functions.

History lives on the records themselves (automem.core.memory.HISTORY_KEYS), written in the same Chroma call as the
change it records: a restatement updates the memory's metadata anyway, an update writes the old record anyway. A
separate collection of events would cost one more Chroma write per write (measured at 10,000 memories: +45% on a
restatement, +70% on an update, without the model's time), and `forget`, `export`, `import` and `migrate` would each
have to carry it; on the record it goes wherever the record goes, and `forget` deletes it with the record. Events are
a view built from the records:

- created: the record (created_at, session, evidence: automem.core.provenance);
- restated: the first and the latest restatement (when, which session, its excerpt); `restated` counts them all;
- updated_from / edited / merged: the records superseded into this one (found by their `superseded_by`), by how
  (`superseded_how`: update, edit, merge) with their reason and time;
- superseded_by: this record's own `superseded_by`, `superseded_how`, `superseded_reason`, `superseded_at`;
- pinned / unpinned: the latest of each;
- forgotten: the tombstone (the id and the time only).

Other memories are named by id only: no copy of a memory's words lives in another memory's history, so forgetting
one erases its words everywhere.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ..errors import NotFound, UsageError
from .memory import EVIDENCE_KEYS, HELD, HISTORY_KEYS, Memory
from .provenance import EXCERPT_CHARS, NOT_RECORDED, Evidence, clean_excerpt, describe

KINDS = ("created", "restated", "updated_from", "edited", "merged", "superseded_by", "pinned", "unpinned",
         "forgotten")
HOWS = ("update", "edit", "merge")  # how a memory was superseded
BACK_LINK = {"update": "updated_from", "edit": "edited", "merge": "merged"}  # ...as the newer one's event
CHAIN_DEPTH = 50  # a chain longer than this is cut (a cycle cannot make show loop)
SOURCE_LINE_CHARS = 120


@dataclass
class Event:
    """One event of one memory's history (see the module docstring for each kind)."""

    memory_id: str
    kind: str
    at: int
    other_id: str = ""  # updated_from / edited / merged / superseded_by: the other memory
    reason: str = ""
    session_id: str = ""
    task_id: str = ""
    excerpt: str = ""
    speaker: str = ""
    role: str = ""
    turn: int = 0
    origin: str = ""
    count: int = 0  # restated: how many restatements in all
    which: str = ""  # restated: first | latest

    def to_json(self) -> dict[str, Any]:
        out = {"memory_id": self.memory_id, "kind": self.kind, "at": self.at}
        out.update({k: v for k, v in asdict(self).items() if k not in out and v not in ("", 0, None)})
        return out


# -- recording (plain functions on Memory objects; the caller writes them in the call it makes anyway) --------------
def record_restated(memory: Memory, session_id: str, evidence: Evidence | None, now: int) -> None:
    """`memory` was said again (its `restated` already counts this one): the first restatement is kept as such,
    every later one replaces the latest."""
    which = "first" if int(memory.restated or 0) <= 1 and not memory.restated_first_at else "last"
    setattr(memory, f"restated_{which}_at", int(now))
    setattr(memory, f"restated_{which}_session", session_id or "")
    setattr(memory, f"restated_{which}_excerpt", evidence.excerpt if evidence is not None else "")


def supersede(old: Memory, new_id: str, reason: str, how: str, now: int) -> None:
    """`old` is replaced by `new_id` (how: update, edit or merge)."""
    old.status, old.superseded_by, old.updated_at = "superseded", new_id, int(now)
    old.superseded_at, old.superseded_reason, old.superseded_how = int(now), (reason or "")[:200], how


def record_pinned(memory: Memory, value: int, now: int) -> None:
    """`memory` is pinned (1) or unpinned (0) now: the mark and its time (the caller writes it)."""
    memory.pinned = 1 if value else 0
    if value:
        memory.pinned_at = int(now)
    else:
        memory.unpinned_at = int(now)


def carried_history(old: Memory) -> dict[str, Any]:
    """What a correction of `old` keeps of its history: its restatements and pin times (not how it was superseded:
    the correction is the active one)."""
    return {k: getattr(old, k) for k in HISTORY_KEYS if k.startswith(("restated_", "pinned_at", "unpinned_at"))}


# -- reading -------------------------------------------------------------------------------------------------------
def created_event(m: Memory) -> Event:
    ev = Evidence.of(m)
    return Event(m.id, "created", int(m.created_at or 0), session_id=m.session_id, task_id=m.task_id,
                 excerpt=ev.excerpt, speaker=ev.speaker, role=ev.role, turn=ev.turn, origin=ev.origin)


def superseded_into(store, memory_id: str) -> list[Memory]:
    """The records superseded into `memory_id` (the values it replaced, the duplicates merged into it)."""
    return list(store.iter_records(where={"superseded_by": memory_id}))


def events_of(m: Memory, predecessors: Sequence[Memory] = ()) -> list[Event]:
    """The events of `m`, oldest first, from its record and the records superseded into it."""
    out = [created_event(m)]
    count = int(m.restated or 0)
    for which, label in (("first", "first"), ("last", "latest")):
        at = getattr(m, f"restated_{which}_at")
        if at:
            out.append(Event(m.id, "restated", at, session_id=getattr(m, f"restated_{which}_session"),
                             excerpt=getattr(m, f"restated_{which}_excerpt"), count=count, which=label))
    for p in predecessors:
        how = p.superseded_how or "update"
        out.append(Event(m.id, BACK_LINK.get(how, "updated_from"), int(p.superseded_at or p.updated_at or 0),
                         other_id=p.id, reason=p.superseded_reason))
    if m.pinned_at:
        out.append(Event(m.id, "pinned", m.pinned_at))
    if m.unpinned_at:
        out.append(Event(m.id, "unpinned", m.unpinned_at))
    if m.status == "superseded" and m.superseded_by:
        out.append(Event(m.id, "superseded_by", int(m.superseded_at or m.updated_at or 0), other_id=m.superseded_by,
                         reason=m.superseded_reason))
    order = {k: i for i, k in enumerate(KINDS)}
    out.sort(key=lambda e: (e.at, order.get(e.kind, 99)))
    return out


def history_of(store, memory_id: str) -> list[Event]:
    """Every event of one memory, oldest first; a forgotten memory's is its `forgotten` event alone. Raises
    NotFound for an id never seen here."""
    found = store.get([memory_id])
    if found and found[0].status != "forgotten":
        return events_of(found[0], superseded_into(store, memory_id))
    when = _forgotten_at(store, memory_id)
    if when:
        return [Event(memory_id, "forgotten", when)]
    raise NotFound(f"no memory with id {memory_id} (see `automem list --all`)")


# -- show ----------------------------------------------------------------------------------------------------------
@dataclass
class Step:
    """One link of a chain: a memory (or what is left of a forgotten one) and how it is linked."""

    id: str
    link: str  # updated_from | edited | merged (a value it replaced) / superseded_by (what replaced it)
    at: int = 0
    reason: str = ""
    memory: Memory | None = None  # None: forgotten (or never known here)
    forgotten_at: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "link": self.link, "at": self.at, "reason": self.reason}
        if self.memory is None:
            out.update(text=None, status="forgotten" if self.forgotten_at else "unknown")
            if self.forgotten_at:
                out["forgotten_at"] = self.forgotten_at
            return out
        m = self.memory
        ev = Evidence.of(m)
        out.update(text=m.text, status=m.status, created_at=m.created_at, session_id=m.session_id, task_id=m.task_id,
                   evidence=ev.to_json() if ev.recorded else None)
        return out


@dataclass
class Shown:
    """`show`'s answer: the memory, its evidence, its events (created first), the values it replaced (each with
    its own session and excerpt, nearest first) and, when it is no longer active, what replaced it."""

    memory: Memory
    evidence: Evidence
    events: list[Event] = field(default_factory=list)
    replaced: list[Step] = field(default_factory=list)
    replaced_by: list[Step] = field(default_factory=list)
    private: bool = False  # the reader may see the memory but not where it came from (the owner's, in the gateway)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.memory.to_json()}
        for key in EVIDENCE_KEYS + HISTORY_KEYS:
            out.pop(key, None)
        if self.private:
            for key in ("session_id", "task_id", "job", "added_by"):
                out.pop(key, None)
            out.update(evidence=None, source=PRIVATE_SOURCE, events=[], replaced=[], replaced_by=[])
            return out
        out["evidence"] = self.evidence.to_json() if self.evidence.recorded else None
        out["source"] = describe(self.evidence)
        out["events"] = [e.to_json() for e in self.events]
        out["replaced"] = [s.to_json() for s in self.replaced]
        out["replaced_by"] = [s.to_json() for s in self.replaced_by]
        return out


PRIVATE_SOURCE = "shared by the owner (where it was learned is the owner's)"


def _forgotten_at(store, memory_id: str) -> int:
    for t in store.tombstones_of([memory_id]):
        return int(t.get("forgotten_at") or 0) or 1
    return 0


def show(store, memory_id: str, *, profile: str | None = None, scopes: Sequence[str] | None = None) -> Shown:
    """The memory `memory_id` with its provenance, its events and its whole chain.

    `scopes` None: the owner at the CLI (any memory). Else a reader speaking for `profile` and `scopes` (an agent's
    identity): a memory it may not see is unknown to it, and one it sees but does not own (the owner's shared
    instructions, for someone else) comes without its source, events or chain. Raises NotFound
    (automem.errors.NotFound, one line) for an unknown or forgotten id, and for a memory held for review (not stored:
    `automem review` lists it)."""
    found = store.get([memory_id])
    if not found or found[0].status == "forgotten":
        when = _forgotten_at(store, memory_id)
        if when and (scopes is None or _tombstone_readable(store, memory_id, profile, scopes)):
            raise NotFound(f"memory {memory_id} was forgotten on {_date(when)}: its words are deleted, only the id "
                           f"stays (see `automem list --all`)")
        raise NotFound(f"no memory with id {memory_id} (see `automem list --all`)")
    mem = found[0]
    if scopes is not None:
        from .visibility import is_visible

        meta = {**mem.metadata(), "status": "active"}  # a superseded value of one's own is part of one's history
        if not is_visible(meta, profile, store.config.shared_wings, scopes=scopes, inherit=True):
            raise NotFound(f"no memory with id {memory_id} (see `automem list --all`)")
    if mem.status == HELD:
        raise NotFound(f"{memory_id} is held for review, not stored (`review` lists it with the reason)")
    if scopes is not None and mem.scope not in scopes:
        return Shown(mem, Evidence(), private=True)
    before = superseded_into(store, mem.id)
    shown = Shown(mem, Evidence.of(mem), events_of(mem, before))
    shown.replaced = _back(store, mem, before, scopes)
    shown.replaced_by = _forward(store, mem, scopes)
    return shown


def _back(store, mem: Memory, before: list[Memory], scopes) -> list[Step]:
    """The values `mem` replaced, nearest first, level by level."""
    steps: list[Step] = []
    seen = {mem.id}
    level = before
    for _ in range(CHAIN_DEPTH):
        level = [m for m in level if m.id not in seen and (scopes is None or m.scope == mem.scope)]
        if not level:
            break
        level.sort(key=lambda m: (-(m.superseded_at or m.updated_at or 0), m.id))
        nxt: list[Memory] = []
        for m in level:
            seen.add(m.id)
            steps.append(Step(m.id, BACK_LINK.get(m.superseded_how or "update", "updated_from"),
                              int(m.superseded_at or m.updated_at or 0), m.superseded_reason, m))
            nxt += superseded_into(store, m.id)
        level = nxt
    return steps


def _forward(store, mem: Memory, scopes) -> list[Step]:
    """What replaced `mem`, to the active memory at the end of the chain."""
    steps: list[Step] = []
    seen = {mem.id}
    cur = mem
    for _ in range(CHAIN_DEPTH):
        nxt = cur.superseded_by
        if cur.status != "superseded" or not nxt or nxt in seen:
            break
        seen.add(nxt)
        found = store.get([nxt])
        m = found[0] if found and found[0].status != "forgotten" else None
        if m is not None and scopes is not None and m.scope != mem.scope:
            break
        step = Step(nxt, "superseded_by", int(cur.superseded_at or cur.updated_at or 0), cur.superseded_reason, m)
        steps.append(step)
        if m is None:
            step.forgotten_at = _forgotten_at(store, nxt)
            break
        cur = m
    return steps


def _tombstone_readable(store, memory_id: str, profile: str | None, scopes: Sequence[str]) -> bool:
    for t in store.tombstones_of([memory_id]):
        return (profile is None or t.get("profile") == profile) and t.get("scope", "") in scopes
    return False


def _date(ts: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ts))) if ts else "?"


# -- the short line the agent's search results carry -----------------------------------------------------------------
def source_line(mem: Memory, scopes: Sequence[str] | None = None, limit: int = SOURCE_LINE_CHARS) -> str:
    """"2025-06-01, session 20250601_ab, turn 3: “我们改用Python 3.12了”" (when, which session, the excerpt), or
    NOT_RECORDED. A reader that does not own the memory (the owner's shared instructions, in the gateway) gets
    PRIVATE_SOURCE instead of the owner's words."""
    if scopes is not None and mem.scope not in scopes:
        return PRIVATE_SOURCE
    ev = Evidence.of(mem)
    when = time.strftime("%Y-%m-%d", time.localtime(int(mem.created_at))) if mem.created_at else ""
    parts = [p for p in (when, f"session {mem.session_id}" if mem.session_id else "",
                         f"task {mem.task_id}" if mem.task_id else "", f"turn {ev.turn}" if ev.turn else "",
                         ev.origin if ev.origin and not ev.excerpt else "") if p]
    head = ", ".join(parts)
    if not ev.excerpt:
        return head if ev.origin else (head + f" ({NOT_RECORDED} words)" if head else NOT_RECORDED)
    room = max(20, limit - len(head) - 4)
    quote = ev.excerpt if len(ev.excerpt) <= room else ev.excerpt[:room - 1].rstrip() + "…"
    return f"{head}: “{quote}”" if head else f"“{quote}”"


# -- export / import -------------------------------------------------------------------------------------------------
EXCERPT_KEYS = ("source_excerpt", "restated_first_excerpt", "restated_last_excerpt")


def export_json(m: Memory) -> dict[str, Any]:
    """A memory as one export line: every field (its evidence and history included), text and excerpts redacted
    again on the way out (a record stored before a pattern existed must not leave in a file)."""
    from ..text import redact_secrets

    out = {**m.to_json(), "text": redact_secrets(m.text)}
    for key in EXCERPT_KEYS:
        if out.get(key):
            out[key] = clean_excerpt(out[key])
    return out


def check_imported(m: Memory, meta: dict, where: str) -> None:
    """An imported memory's evidence and history, cleaned as written ones are: excerpts redacted (their size and
    the times' and counts' bounds are checked with every other field: automem.ops.transfer.check_metadata, through
    automem.core.memory.value_problem), roles / origins / hows known (else emptied); a line without any evidence is
    marked as imported. UsageError (one line) when an excerpt is not text within its bound."""
    for key in EXCERPT_KEYS:
        value = meta.get(key, "")
        if not isinstance(value, str) or len(value) > EXCERPT_CHARS:
            raise UsageError(f"{where}: \"{key}\" must be text of at most {EXCERPT_CHARS} characters")
    ev = Evidence.of(m).cleaned()
    ev.origin = ev.origin or "import"
    for key in EVIDENCE_KEYS:
        setattr(m, key, 0 if key == "source_turn" else "")
    ev.to_memory(m)
    for key in ("restated_first_excerpt", "restated_last_excerpt"):
        setattr(m, key, clean_excerpt(getattr(m, key)))
    for key in ("restated_first_session", "restated_last_session", "superseded_reason"):
        setattr(m, key, clean_excerpt(getattr(m, key), 200))
    if m.superseded_how not in HOWS:
        m.superseded_how = ""
