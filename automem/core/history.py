"""A memory's history: the events that made it what it is, and `show` (the memory, where it was learned, the values
it replaced and what replaced it). The one way to read history: the CLI, the Hermes tools and the dashboard call
these functions.

Events live with the store, in its collection `history` (automem.core.store: id + metadata, one placeholder vector
each), so they work on a local root and on a Chroma server alike and go with `export` / `import` / `migrate`. Each
is written in the same lock and batch as the write it records. Kinds:

- created: not stored: it is the record itself (created_at, session, evidence: automem.core.provenance);
- restated: the write path found the memory said again (a duplicate): which session, its excerpt. The first and the
  latest are kept (two records per memory, ids `<id>:restated:first` / `:latest`); `count` is how many in all;
- updated_from / superseded_by: the write path (or compact) replaced a value: on the new memory the old one's id, on
  the old one the new one's id and the reason. Texts are the records' own (the old value stays, superseded);
- merged: compact kept this memory and superseded a duplicate of it (the duplicate gets superseded_by);
- edited: the owner corrected the text (`edit`): on the new memory the old one's id; the old one gets superseded_by
  with reason "edited";
- pinned / unpinned;
- forgotten: not stored either: it is the memory's tombstone (the id and the time only). `forget` deletes every
  event of the memory (their excerpts with them): what stays of a forgotten memory anywhere is its id.

Events name other memories by id only: no copy of a memory's words lives in another memory's history, so forgetting
one erases its words everywhere.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from ..errors import UsageError
from .memory import EVIDENCE_KEYS, Memory
from .provenance import EXCERPT_CHARS, NOT_RECORDED, Evidence, clean_excerpt, describe

KINDS = ("created", "restated", "updated_from", "superseded_by", "merged", "edited", "pinned", "unpinned",
         "forgotten")
STORED_KINDS = KINDS[1:-1]  # created is the record itself, forgotten its tombstone
CHAIN_DEPTH = 50  # a chain longer than this is cut (a cycle cannot make show loop)
SOURCE_LINE_CHARS = 120


@dataclass
class Event:
    """One event of one memory's history (see the module docstring for each kind)."""

    memory_id: str
    kind: str
    at: int
    other_id: str = ""  # updated_from / superseded_by / merged / edited: the other memory
    reason: str = ""  # superseded_by: why ("edited", the write path's or compact's reason)
    session_id: str = ""  # restated: the session that said it again
    task_id: str = ""
    excerpt: str = ""  # restated: the words said again
    speaker: str = ""
    role: str = ""
    turn: int = 0
    origin: str = ""
    count: int = 0  # restated: how many restatements so far
    profile: str = ""
    scope: str = ""
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            self.id = event_id(self.memory_id, self.kind, self.other_id, self.at)

    def metadata(self) -> dict[str, Any]:
        meta = {k: v for k, v in asdict(self).items() if k != "id" and v not in ("", None)}
        meta.update(memory_id=self.memory_id, kind=self.kind, at=int(self.at))
        return meta

    @classmethod
    def from_record(cls, rid: str, meta: dict) -> "Event":
        known = {k: meta.get(k) for k in cls.__dataclass_fields__ if k != "id" and meta.get(k) is not None}
        for k in ("at", "turn", "count"):
            try:
                known[k] = int(known.get(k) or 0)
            except (TypeError, ValueError):
                known[k] = 0
        for k in list(known):
            if k not in ("at", "turn", "count"):
                known[k] = str(known[k])
        known.setdefault("memory_id", "")
        known.setdefault("kind", "")
        return cls(id=rid, **known)

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "memory_id": self.memory_id, "kind": self.kind, "at": self.at}
        out.update({k: v for k, v in asdict(self).items() if k not in out and v not in ("", 0, None)})
        return out


def event_id(memory_id: str, kind: str, other_id: str = "", at: int = 0) -> str:
    """Deterministic: writing an event again (a retried job, an import) replaces it instead of adding a copy."""
    return f"{memory_id}:{kind}:{other_id or int(at)}"


# -- building events (plain functions; the write path, compact, pin and forget write them) ------------------------
def restated_events(memory: Memory, count: int, session_id: str, evidence: Evidence | None, now: int,
                    task_id: str = "") -> list[Event]:
    """The event of the `count`-th restatement of `memory`: the first is kept as such, every later one replaces
    the latest (so a memory said a thousand times has two events, and its count)."""
    ev = evidence or Evidence()
    which = "first" if count <= 1 else "latest"
    return [Event(memory.id, "restated", now, session_id=session_id, task_id=task_id, excerpt=ev.excerpt,
                  speaker=ev.speaker, role=ev.role, turn=ev.turn, origin=ev.origin, count=max(1, count),
                  profile=memory.profile, scope=memory.scope, id=f"{memory.id}:restated:{which}")]


def replaced_events(old: Memory, new: Memory, reason: str, now: int, kind: str = "updated_from") -> list[Event]:
    """`new` replaced `old` (kind updated_from, or edited): an event on each."""
    return [Event(new.id, kind, now, other_id=old.id, reason=reason, profile=new.profile, scope=new.scope),
            Event(old.id, "superseded_by", now, other_id=new.id, reason=reason, profile=old.profile,
                  scope=old.scope)]


def merged_events(kept: Memory, gone: Memory, reason: str, now: int) -> list[Event]:
    """Compact kept `kept` and superseded its duplicate `gone`."""
    return [Event(kept.id, "merged", now, other_id=gone.id, reason=reason, profile=kept.profile, scope=kept.scope),
            Event(gone.id, "superseded_by", now, other_id=kept.id, reason=reason, profile=gone.profile,
                  scope=gone.scope)]


# -- reading and writing -------------------------------------------------------------------------------------------
def write_events(store, events: Sequence[Event]) -> None:
    """Store events (the caller holds the store's lock, with the write they record)."""
    if events:
        store.write_history([(e.id, e.metadata()) for e in {e.id: e for e in events}.values()])


def events_of(store, memory_ids: Sequence[str]) -> list[Event]:
    """The stored events of these memories, oldest first."""
    if not memory_ids:
        return []
    ids = list(dict.fromkeys(memory_ids))
    where = {"memory_id": ids[0]} if len(ids) == 1 else {"memory_id": {"$in": ids}}
    out = [Event.from_record(i, m) for i, m in store.read_history(where)]
    out.sort(key=lambda e: (e.at, STORED_KINDS.index(e.kind) if e.kind in STORED_KINDS else 99, e.id))
    return out


def all_events(store) -> list[Event]:
    """Every stored event (export, migrate), oldest first."""
    out = [Event.from_record(i, m) for i, m in store.read_history()]
    out.sort(key=lambda e: (e.at, e.memory_id, e.id))
    return out


def erase(store, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    """What `forget` does to the history (under its lock): every event of these memories is deleted (the tombstone
    is their `forgotten` event). Returns the deleted events' (id, excerpt). Other memories' events name them by id
    only, and stay."""
    if not memory_ids:
        return []
    gone = [(e.id, e.excerpt) for e in events_of(store, memory_ids)]
    store.delete_history([i for i, _ in gone])
    return gone


def history_of(store, memory_id: str) -> list[Event]:
    """Every event of one memory, oldest first: created (its record), the stored ones; a forgotten memory's is
    its `forgotten` event alone. Raises NotFound for an id never seen here."""
    found = store.get([memory_id])
    if found and found[0].status != "forgotten":
        return [created_event(found[0])] + events_of(store, [memory_id])
    when = _forgotten_at(store, memory_id)
    if when:
        return [Event(memory_id, "forgotten", when, id=f"{memory_id}:forgotten")]
    raise NotFound(f"no memory with id {memory_id} (see `automem list --all`)")


def set_pinned(store, memories: Sequence[Memory], value: int, now: int | None = None) -> list[Memory]:
    """Pin (1) or unpin (0) memories: their mark and a pinned / unpinned event, in one lock. Returns the ones that
    changed (the caller checked they are active and theirs to change)."""
    now = int(now if now is not None else time.time())
    with store.lock():
        changed = [m for m in memories if bool(m.pinned) != bool(value)]
        for m in changed:
            m.pinned = 1 if value else 0
        store.update_metadata(changed)
        write_events(store, [Event(m.id, "pinned" if value else "unpinned", now, profile=m.profile, scope=m.scope)
                             for m in changed])
    return changed


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

    def to_json(self, private: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "link": self.link, "at": self.at, "reason": self.reason}
        if self.memory is None:
            out.update(text=None, status="forgotten" if self.forgotten_at else "unknown")
            if self.forgotten_at:
                out["forgotten_at"] = self.forgotten_at
            return out
        m = self.memory
        out.update(text=m.text, status=m.status, created_at=m.created_at, session_id=m.session_id, task_id=m.task_id,
                   evidence=Evidence.of(m).to_json() if not private else {})
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
        m = self.memory
        out: dict[str, Any] = {**m.to_json()}
        for key in EVIDENCE_KEYS:
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


class NotFound(UsageError):
    """No memory with that id (or one the reader may not see), or a forgotten one: one line, exit 2."""


def created_event(m: Memory) -> Event:
    ev = Evidence.of(m)
    return Event(m.id, "created", int(m.created_at or 0), session_id=m.session_id, task_id=m.task_id,
                 excerpt=ev.excerpt, speaker=ev.speaker, role=ev.role, turn=ev.turn, origin=ev.origin or m.room,
                 profile=m.profile, scope=m.scope, id=f"{m.id}:created")


def _forgotten_at(store, memory_id: str) -> int:
    for t in store.tombstones_of([memory_id]):
        return int(t.get("forgotten_at") or 0) or 1
    return 0


def show(store, memory_id: str, *, profile: str | None = None, scopes: Sequence[str] | None = None) -> Shown:
    """The memory `memory_id` with its provenance, its events and its whole chain.

    `scopes` None: the owner at the CLI (any memory). Else a reader speaking for `profile` and `scopes` (an agent's
    identity): a memory it may not see is unknown to it, and one it sees but does not own (the owner's shared
    instructions, for someone else) comes without its source, events or chain. Raises NotFound (one line) for an
    unknown or forgotten id."""
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
        if mem.scope not in scopes:
            return Shown(mem, Evidence(), private=True)
    shown = Shown(mem, Evidence.of(mem))
    own = events_of(store, [mem.id])
    shown.events = [created_event(mem)] + own
    shown.replaced = _back(store, mem, own, scopes)
    shown.replaced_by = _forward(store, mem, own, scopes)
    return shown


BACK_LINKS = ("updated_from", "edited", "merged")


def _back(store, mem: Memory, own: list[Event], scopes) -> list[Step]:
    """The values `mem` replaced, nearest first, each level read in one go."""
    steps: list[Step] = []
    seen = {mem.id}
    level = [e for e in own if e.kind in BACK_LINKS and e.other_id]
    for _ in range(CHAIN_DEPTH):
        ids = [e.other_id for e in level if e.other_id not in seen]
        if not ids:
            break
        seen.update(ids)
        records = {m.id: m for m in store.get(ids)}
        links = {e.other_id: e for e in level}
        nxt_ids = []
        for i in dict.fromkeys(ids):
            e = links[i]
            m = records.get(i)
            if m is not None and scopes is not None and m.scope != mem.scope:
                continue  # never another person's memory (decisions never cross scopes; a safeguard)
            step = Step(i, e.kind, e.at, e.reason, m if m is not None and m.status != "forgotten" else None)
            if step.memory is None:
                step.forgotten_at = _forgotten_at(store, i)
            else:
                nxt_ids.append(i)
            steps.append(step)
        level = [e for e in events_of(store, nxt_ids) if e.kind in BACK_LINKS and e.other_id] if nxt_ids else []
    return steps


def _forward(store, mem: Memory, own: list[Event], scopes) -> list[Step]:
    """What replaced `mem`, to the active memory at the end of the chain."""
    steps: list[Step] = []
    seen = {mem.id}
    cur = mem
    reasons = {e.other_id: e for e in own if e.kind == "superseded_by"}
    for _ in range(CHAIN_DEPTH):
        nxt = cur.superseded_by
        if cur.status != "superseded" or not nxt or nxt in seen:
            break
        seen.add(nxt)
        found = store.get([nxt])
        e = reasons.get(nxt)
        m = found[0] if found and found[0].status != "forgotten" else None
        if m is not None and scopes is not None and m.scope != mem.scope:
            break
        step = Step(nxt, "superseded_by", e.at if e else int(cur.updated_at or 0), e.reason if e else "", m)
        if m is None:
            step.forgotten_at = _forgotten_at(store, nxt)
            steps.append(step)
            break
        steps.append(step)
        cur = m
        reasons = {e.other_id: e for e in events_of(store, [m.id]) if e.kind == "superseded_by"} \
            if m.superseded_by else {}
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
        return head + (f" ({NOT_RECORDED} words)" if head else NOT_RECORDED) if not ev.origin else head
    room = max(20, limit - len(head) - 4)
    quote = ev.excerpt if len(ev.excerpt) <= room else ev.excerpt[:room - 1].rstrip() + "…"
    return f"{head}: “{quote}”" if head else f"“{quote}”"


# -- export / import -------------------------------------------------------------------------------------------------
# An export line is one memory; its history rides on it as a list "history" (left out when it has none), so a line
# is whole on its own and a memory left out of an export (forgotten) takes its history with it.
EVENT_FIELDS = tuple(f for f in Event.__dataclass_fields__ if f != "id")
MAX_EVENTS_PER_LINE = 1000  # an import line with more is refused (every input has a bound)


def events_by_memory(store) -> dict[str, list[Event]]:
    """Every stored event, grouped by memory id (each list oldest first)."""
    out: dict[str, list[Event]] = {}
    for e in all_events(store):
        out.setdefault(e.memory_id, []).append(e)
    return out


def export_json(m: Memory, events: Sequence[Event] = ()) -> dict[str, Any]:
    """A memory as one export line: its fields, text and excerpts redacted again on the way out (a record stored
    before a pattern existed must not leave in a file), and its events as "history"."""
    from ..text import redact_secrets

    out = {**m.to_json(), "text": redact_secrets(m.text)}
    if out.get("source_excerpt"):
        out["source_excerpt"] = clean_excerpt(out["source_excerpt"])
    if events:
        out["history"] = [event_json(e) for e in events]
    return out


def event_json(e: Event) -> dict[str, Any]:
    """An event as its memory's export line holds it (no memory_id: the line's id)."""
    out = e.to_json()
    out.pop("memory_id", None)
    if out.get("excerpt"):
        out["excerpt"] = clean_excerpt(out["excerpt"])
    return out


def history_from_json(obj: dict, where: str) -> list[Event]:
    """The events an export line carries ([] when none); UsageError (one line) when they are not events."""
    raw = obj.get("history")
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_EVENTS_PER_LINE:
        raise UsageError(f"{where}: \"history\" must be a list of at most {MAX_EVENTS_PER_LINE} events")
    mid = obj.get("id")
    out = []
    for n, item in enumerate(raw):
        if not isinstance(item, dict):
            raise UsageError(f"{where}: history[{n}] is not an object")
        out.append(event_from_json({**item, "memory_id": mid}, f"{where}: history[{n}]"))
    return out


def event_from_json(obj: dict, where: str) -> Event:
    """An event back from its JSON (checked: kind, ids, numbers, a bounded excerpt); UsageError if not one."""
    import re

    id_ok = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
    unknown = sorted(set(obj) - set(EVENT_FIELDS) - {"id"})
    if unknown:
        raise UsageError(f"{where}: unknown history field {', '.join(map(repr, unknown))}")
    if obj.get("kind") not in STORED_KINDS:
        raise UsageError(f"{where}: history kind must be one of {', '.join(STORED_KINDS)}")
    for key in ("id", "memory_id"):
        if not isinstance(obj.get(key), str) or not id_ok.match(obj[key]):
            raise UsageError(f"{where}: history needs a string field {key!r} (letters, digits, _ . : -)")
    if obj.get("other_id") not in (None, "") and (not isinstance(obj["other_id"], str) or not id_ok.match(obj["other_id"])):
        raise UsageError(f"{where}: history field 'other_id' must be a memory id")
    for key in ("at", "turn", "count"):
        value = obj.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 53:
            raise UsageError(f"{where}: history field {key!r} must be a whole number")
    for key in EVENT_FIELDS:
        if key not in ("at", "turn", "count") and obj.get(key) is not None and not isinstance(obj[key], str):
            raise UsageError(f"{where}: history field {key!r} must be a string")
    excerpt = obj.get("excerpt") or ""
    if len(excerpt) > EXCERPT_CHARS:
        raise UsageError(f"{where}: history excerpt longer than {EXCERPT_CHARS} characters")
    fields = {k: obj[k] for k in EVENT_FIELDS if k in obj and obj[k] is not None}
    for key in ("excerpt", "reason", "speaker", "session_id", "task_id", "origin", "role", "profile", "scope"):
        if key in fields:  # bounded, whitespace folded, secrets redacted, like every stored text
            fields[key] = clean_excerpt(fields[key], EXCERPT_CHARS if key == "excerpt" else 200)
    return Event(id=obj["id"], **fields)


def import_events(store, events: Iterable[Event]) -> int:
    """Store imported events as given (ids kept, so importing twice changes nothing). Returns how many."""
    events = list(events)
    if not events:
        return 0
    with store.lock():
        write_events(store, events)
    return len(events)
