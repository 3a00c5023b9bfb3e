"""`automem compact`: merge near-duplicates that raced in.

On one machine the write lock makes every write decision see the writes before it. Writers on several machines
sharing a Chroma server have no such lock, so two of them can both store "new" for what is one fact, or both keep a
fact and its changed value active. Compaction replays the write path's own decision (`automem.core.dedup.decide`) over
the store's history, in the order the records were written (Chroma returns them in insertion order; ties of the
one-second `created_at` do not matter), each active memory against the memories that were alive when it was
written and are visible to it (same wing; its own profile, or any profile in a shared wing):

- the pair is a **duplicate** -> the older stays, the newer becomes `superseded` with `superseded_by` = the older;
- the pair is an **update** -> the older becomes `superseded` with `superseded_by` = the newer;
- two active memories **replaced the same one** (two machines changed one fact at once: both name it in
  `replaces`, or, for records written before that key, the replay finds this one updating a value that a later
  write, which did not see it, superseded too) -> the later change stays current, the other is superseded by it
  (`automem.core.convergence`).

"Alive when it was written" includes memories superseded later (by the memory that superseded them, which comes
after) and memories forgotten later, so on a store whose writes never raced the replay repeats the decisions the
write path made and changes nothing. A writer that raced (its partner was invisible to it) is decided again with
the partner in view: that is the store a serialised run of the same writes would have left.

Passes repeat until one changes nothing, so a second `compact` changes nothing either. Nothing is deleted. On the
embedded store it runs under the write lock; on a server it is safe next to live writers (a memory forgotten
meanwhile stays forgotten, see `Store.update_metadata`).

With a judge (`automem compact --judge`), the pairs the write path stored as "new" without anyone comparing them
(a memory's `related_to` names its close neighbour, its `maybe_updates` a far one) go to the judge too, in batched
calls made before the lock is taken, each answer as the write path may apply it (`dedup.ask`): duplicate -> the
newer is superseded by the older (for a far pair only on the word of a judge that told the control pair apart);
update -> the older by the newer (between events only where `dedup.event_may_replace` allows it); new -> the link
is cleared, so the pair is not asked again. A failed
judge call changes nothing of its pairs. A memory the judge kept apart from its neighbours (at write time or
here: `judged_new`) is never merged with them by the replay of the rules.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

from ..core import history
from ..core.candidate import mark_judged_new, unlink, waits_for
from ..core.convergence import race_key
from ..core.dedup import Asked, Neighbour, Thresholds, ask, decide
from ..core.memory import Memory
from ..core.write_path import EVENT_ROOMS, EVENT_WING, JUDGED_NEW

_BLOCK = 512  # rows per matrix product: bounds memory (block x group size floats)
MAX_PASSES = 5


@dataclass
class Record:
    """A stored memory (any status) with its stored vector and its place in the write order."""

    memory: Memory
    vector: Sequence[float]
    pos: int


@dataclass
class Merge:
    action: str  # duplicate | update
    kept: str  # stays active
    superseded: str  # becomes superseded, superseded_by = kept
    reason: str
    distance: float
    kept_text: str
    superseded_text: str
    wing: str
    kept_profile: str
    superseded_profile: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class CompactReport:
    scanned: int
    merges: list[Merge] = field(default_factory=list)
    passes: int = 0
    dry_run: bool = False
    skipped: list[str] = field(default_factory=list)  # ids without a usable vector
    seconds: float = 0.0
    judged: int = 0  # related_to pairs the judge answered
    judge_error: str = ""

    def to_json(self) -> dict:
        return {"scanned": self.scanned, "merged": len(self.merges), "passes": self.passes, "dry_run": self.dry_run,
                "duplicates": sum(m.action == "duplicate" for m in self.merges),
                "updates": sum(m.action == "update" for m in self.merges),
                "skipped": self.skipped, "seconds": round(self.seconds, 3), "judged": self.judged,
                "judge_error": self.judge_error}


def visibility_group(m: Memory, shared_wings: Iterable[str]) -> tuple[str, str, str]:
    """Memories that can see each other in the write path: one scope (never across people), and in it a shared
    wing across profiles (the owner's only), else one profile's wing."""
    if not m.scope and m.wing in set(shared_wings):
        return ("", "*", m.wing)
    return (m.scope, m.profile, m.wing)


_ACTIVE, _SUPERSEDED, _FORGOTTEN, _HELD = 0, 1, 2, 3
# A memory held for the owner's review (automem.core.review) was never alive for the write path: never compared.
_CODE = {"active": _ACTIVE, "superseded": _SUPERSEDED, "forgotten": _FORGOTTEN, "held": _HELD}


class _Group:
    """One visibility group in write order, as arrays the replay updates in place."""

    def __init__(self, records: list[Record], pos_of: dict[str, int]):
        import numpy as np

        self.records = sorted(records, key=lambda r: r.pos)
        self.vecs = np.asarray([r.vector for r in self.records], dtype=np.float32)
        self.pos = np.asarray([r.pos for r in self.records], dtype=np.int64)
        self.status = np.asarray([_CODE.get(r.memory.status, _ACTIVE) for r in self.records], dtype=np.int8)
        # Write position of the memory that superseded each one (-1: unknown, so dead for everything after it).
        self.sup_pos = np.asarray([pos_of.get(r.memory.superseded_by, -1) for r in self.records], dtype=np.int64)
        self.updated = np.asarray([r.memory.updated_at for r in self.records], dtype=np.int64)
        self.created = np.asarray([r.memory.created_at for r in self.records], dtype=np.int64)
        self.index_of = {r.memory.id: n for n, r in enumerate(self.records)}

    def alive_before(self, i: int):
        """Which earlier members were alive when member i was written (or since made dead by this replay)."""
        st, p = self.status[:i], self.pos[i]
        return ((st == _ACTIVE) | ((st == _SUPERSEDED) & (self.sup_pos[:i] >= p))
                | ((st == _FORGOTTEN) & (self.updated[:i] > self.created[i])))


RACED = "raced: both replaced {}; the later change stays current"


def _race(g: _Group, a: int, b: int, target: str, merges: list[Merge], dist: float = 0.0) -> None:
    """Two active members that each replaced `target` (machines that changed one fact at once): the later change
    (automem.core.convergence) stays, the other is superseded by it."""
    ma, mb = g.records[a].memory, g.records[b].memory
    win, lose = (a, b) if race_key(ma.created_at, ma.id) > race_key(mb.created_at, mb.id) else (b, a)
    w, loser = g.records[win].memory, g.records[lose].memory
    g.status[lose], g.sup_pos[lose] = _SUPERSEDED, g.pos[win]
    merges.append(Merge("update", w.id, loser.id, RACED.format(target), dist, w.text, loser.text, w.wing, w.profile,
                        loser.profile))


def settle_races(g: _Group, merges: list[Merge]) -> None:
    """Active members naming the same replaced memory (`replaces`): one stays current."""
    by_target: dict[str, list[int]] = {}
    for n, r in enumerate(g.records):
        if g.status[n] == _ACTIVE and r.memory.replaces:
            by_target.setdefault(r.memory.replaces, []).append(n)
    for target, members in by_target.items():
        while len([m for m in members if g.status[m] == _ACTIVE]) > 1:
            alive = [m for m in members if g.status[m] == _ACTIVE]
            _race(g, alive[0], alive[1], target, merges)


def plan_pass(groups: list[_Group], thresholds: Thresholds, k: int) -> list[Merge]:
    """One replay over every group; marks the merges in the groups' arrays and returns them in order."""
    import numpy as np

    merges: list[Merge] = []
    for g in groups:
        settle_races(g, merges)
        n = len(g.records)
        for start in range(0, n, _BLOCK):
            stop = min(n, start + _BLOCK)
            sims = g.vecs[start:stop] @ g.vecs[:stop].T  # row i: cosine similarity to every member up to the block
            for i in range(max(start, 1), stop):
                if g.status[i] != _ACTIVE:
                    continue
                row = np.where(g.alive_before(i), sims[i - start, :i], -np.inf)
                take = min(k, i)
                nearest = np.argpartition(-row, take - 1)[:take] if take < i else np.arange(i)
                # decide() never merges beyond the `related` distance but for a single-valued slot's new value
                # (dedup.SLOT_DISTANCE), which the write path applied already; a replay looks within `related`
                # only: skip the (pure Python) call when nothing is that close, which is most memories.
                nearest = [int(j) for j in sorted(nearest, key=lambda j: -row[j])
                           if np.isfinite(row[j]) and 1.0 - row[j] <= thresholds.related]
                if not nearest:
                    continue
                me = g.records[i].memory
                kept_apart = set(str(me.extra.get(JUDGED_NEW) or "").split(","))  # the judge said: both true
                nearest = [j for j in nearest if g.records[j].memory.id not in kept_apart]
                if not nearest:
                    continue
                neighbours = [Neighbour(g.records[j].memory.id, g.records[j].memory.text, float(1.0 - row[j]))
                              for j in nearest]
                verdict = decide(me.text, neighbours, thresholds, event=me.wing == EVENT_WING)
                if verdict.action not in ("duplicate", "update") or not verdict.matched_id:
                    continue
                j = next((j for j in nearest if g.records[j].memory.id == verdict.matched_id), None)
                if j is not None and verdict.action == "update" and g.status[j] == _SUPERSEDED:
                    # It changed a value that a later write, which did not see this one, changed too: a race.
                    other = g.index_of.get(g.records[j].memory.superseded_by)
                    if other is not None and other != i and g.status[other] == _ACTIVE:
                        _race(g, i, other, g.records[j].memory.id, merges, float(1.0 - row[j]))
                    continue
                if j is None or g.status[j] != _ACTIVE:
                    continue  # the write path decided against a memory that is no longer current: history stands
                other = g.records[j].memory
                dist = float(1.0 - row[j])
                if verdict.action == "duplicate":  # keep the oldest
                    g.status[i], g.sup_pos[i] = _SUPERSEDED, g.pos[j]
                    merges.append(Merge("duplicate", other.id, me.id, verdict.reason, dist, other.text, me.text,
                                        me.wing, other.profile, me.profile))
                else:  # the newer states the changed value
                    g.status[j], g.sup_pos[j] = _SUPERSEDED, g.pos[i]
                    merges.append(Merge("update", me.id, other.id, verdict.reason, dist, me.text, other.text,
                                        me.wing, me.profile, other.profile))
    return merges


def plan(records: Sequence[Record], shared_wings: Iterable[str], thresholds: Thresholds, k: int,
         max_passes: int = MAX_PASSES) -> tuple[list[Merge], int]:
    """Replay passes until one changes nothing. Returns the merges in the order made and the passes run."""
    shared = list(shared_wings)
    pos_of = {r.memory.id: r.pos for r in records}
    by_group: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        by_group.setdefault(visibility_group(r.memory, shared), []).append(r)
    groups = [_Group(members, pos_of) for members in by_group.values() if len(members) > 1]
    merges: list[Merge] = []
    passes = 0
    while passes < max_passes:
        passes += 1
        found = plan_pass(groups, thresholds, k)
        merges += found
        if not found:
            break
    return merges, passes


def load_records(store) -> tuple[list[Record], list[str]]:
    """Every stored memory with its vector, in write order; ids whose vector is missing come second."""
    from .migrate import iter_raw

    records, skipped = [], []
    dim = None
    for pos, rec in enumerate(iter_raw(store.collection)):
        vec = rec.embedding
        if vec is None or len(vec) == 0 or (dim is not None and len(vec) != dim):
            skipped.append(rec.id)
            continue
        dim = dim or len(vec)
        records.append(Record(Memory.read(rec.id, rec.document, rec.metadata), vec, pos))
    return records, skipped


JUDGE_BATCH = 40  # related_to pairs per judge call


def related_pairs(records: Sequence[Record], merges: Sequence[Merge],
                  shared_wings: Iterable[str]) -> list[tuple[Memory, Memory]]:
    """(newer, older) pairs still to be judged: an active memory and the active one its `related_to` (or, stored
    far from any other, its `maybe_updates`) names, in the same visibility group, neither merged away nor a task
    record."""
    gone = {m.superseded for m in merges}
    by_id = {r.memory.id: r for r in records}
    shared = list(shared_wings)
    out = []
    for r in records:
        me = r.memory
        for link, _ in waits_for(me):
            other = by_id.get(link)
            if (other is None or me.status != "active" or other.memory.status != "active" or me.id in gone
                    or other.memory.id in gone or me.room in EVENT_ROOMS or other.memory.room in EVENT_ROOMS
                    or not (visibility_group(me, shared) == visibility_group(other.memory, shared)
                            or _siblings(me, other.memory))):
                continue
            newer, older = (me, other.memory) if r.pos > other.pos else (other.memory, me)
            out.append((newer, older))
    return out


def _siblings(a: Memory, b: Memory) -> bool:
    """A persona memory and an instruction of one profile and scope: a waiting pair may join them (the write path
    found the old value of an attribute in the other wing, or a refiled candidate near a memory of the wing it was
    given for)."""
    return a.scope == b.scope and a.profile == b.profile and {a.wing, b.wing} == {"user", "instruction"}


def judge_related(pairs: Sequence[tuple[Memory, Memory]], judge
                  ) -> tuple[list[Merge], list[tuple[Memory, str]], int, str]:
    """Ask `judge` about the pairs in batches: (merges, the links settled as new as (memory, the id it named),
    pairs answered, the first error)."""
    merges: list[Merge] = []
    settled: list[tuple[Memory, str]] = []
    answered, error = 0, ""
    taken: set[str] = set()
    for start in range(0, len(pairs), JUDGE_BATCH):
        batch = pairs[start:start + JUDGE_BATCH]
        # as the write path asks: a far pair (its newer waits for the older only as a possible new value) or an
        # event, with the control pair beside them
        asked = [Asked(new.text, old.text, new.wing,
                       (old.id, True) in waits_for(new) or (new.id, True) in waits_for(old)) for new, old in batch]
        try:
            answers, _ = ask(judge, asked)
        except Exception as exc:  # noqa: BLE001 - those pairs stay as they are, linked for the next run
            error = error or f"{exc.__class__.__name__}: {exc}"
            continue
        for (new, old), answer in zip(batch, answers):
            if not answer:
                continue
            answered += 1
            if new.id in taken or old.id in taken:
                continue
            if answer == "duplicate":
                merges.append(Merge("duplicate", old.id, new.id, "judge: duplicate (related_to)", 0.0, old.text,
                                    new.text, new.wing, old.profile, new.profile))
                taken.update((new.id, old.id))
            elif answer == "update":
                merges.append(Merge("update", new.id, old.id, "judge: update (related_to)", 0.0, new.text, old.text,
                                    new.wing, new.profile, old.profile))
                taken.update((new.id, old.id))
            else:
                named = any(i == old.id for i, _ in waits_for(new))
                settled.append((new, old.id) if named else (old, new.id))
    return merges, settled, answered, error


def compact(store, dry_run: bool = False, now: int | None = None, judge=None) -> CompactReport:
    """Plan and (unless dry_run) apply the merges on `store`; see the module docstring."""
    t0 = time.monotonic()
    now = int(now if now is not None else time.time())
    thresholds = Thresholds.from_config(store.config)
    judged: list[Merge] = []
    settled: list[tuple[Memory, str]] = []
    answered, judge_error = 0, ""
    if judge is not None:  # the slow LLM calls first, outside the lock; the replay below re-checks every status
        records, _ = load_records(store)
        rule_merges, _ = plan(records, store.config.shared_wings, thresholds, store.config.dedup_neighbours)
        judged, settled, answered, judge_error = judge_related(
            related_pairs(records, rule_merges, store.config.shared_wings), judge)
    with store.lock():
        records, skipped = load_records(store)
        scanned = sum(r.memory.status == "active" for r in records)
        merges, passes = plan(records, store.config.shared_wings, thresholds, store.config.dedup_neighbours)
        by_id = {r.memory.id: r.memory for r in records}
        gone = {m.superseded for m in merges} | {m.kept for m in merges if m.action == "update"}
        for m in judged:  # only where both are still active and the replay left them alone
            if all(i in by_id and by_id[i].status == "active" and i not in gone for i in (m.kept, m.superseded)):
                merges.append(m)
                gone.update((m.kept, m.superseded))
        if not dry_run and (merges or settled):
            changed: dict[str, Memory] = {}
            for m in merges:
                old, kept = by_id[m.superseded], by_id[m.kept]
                history.supersede(old, kept.id, f"compact: {m.reason}", "merge" if m.action == "duplicate"
                                  else "update", now)
                changed[old.id] = old
                if m.action == "duplicate":
                    kept.updated_at = max(kept.updated_at, now)  # restated: the fact is still current
                    changed.setdefault(kept.id, kept)
            for mem, link in settled:
                current = by_id.get(mem.id)
                far = next((f for i, f in waits_for(current) if i == link), None) if current is not None else None
                if current is not None and current.status == "active" and far is not None:
                    mark_judged_new(current, link)  # judged new: both stay, never merged by rule
                    unlink(current, far)  # ...the pair is not asked again, and both are shown
                    changed.setdefault(current.id, current)
            store.update_metadata(list(changed.values()))
    report = CompactReport(scanned=scanned, merges=merges, passes=passes, dry_run=dry_run, skipped=skipped,
                           seconds=time.monotonic() - t0, judged=answered, judge_error=judge_error)
    from ..log import log_event

    log_event(store.location, "compact", **report.to_json(), merges=[m.to_json() for m in merges])
    return report
