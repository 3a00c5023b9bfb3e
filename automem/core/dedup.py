"""Duplicate / update / new: how a candidate memory relates to the stored memories nearest to it.

Plain functions, no I/O. The write path finds the nearest neighbours (cosine distance, same wing, visible to the
profile) and asks `decide`; `settle` is where an LLM judge decides the pairs the rules cannot. What the rules read
of each text (its units, subjects, changed values, polarity, overlap) is the text analysis in
`automem.core.analysis`; this module only decides.

Loss first. A wrong duplicate or update destroys a fact silently and for ever; a missed duplicate costs one extra
line that a judge or `automem compact` can merge later. The rules therefore say:

- **duplicate** only when nothing of substance on either side is left unmatched: every concept, value, name,
  number and content word of each text is found in the other (after dropping frame words such as "用户", "I",
  "always", "习惯", and mapping synonyms and translations to one concept). One differing word, entity or value,
  whatever the distance, and it is not a duplicate. A candidate that says strictly less than the stored memory
  (only values missing, no negation, not another subject) is a duplicate too: storing nothing loses nothing.
- **update** only for a new value of the same slot, with nothing else changed, and only where the new value
  excludes the old one: the opposite (a negation or antonym: "喜欢" / "不喜欢"), a new quantity ("3.11" ->
  "3.12", 两杯 -> 三杯; not an ordinal or an issue number, which name instances), or a change the candidate
  announces ("改用", "switched to") of one stretch of the same sentence. A value of the same class alone is not a
  slot: a trip to city A and a holiday in city B, 哥哥 and 姐姐, a cat's name and a dog's.
- **new** for everything else, linked (`matched_id`, stored as `related_to`) to the nearest neighbour within the
  related distance. The same words in another order or role are never a duplicate by rule ("I prefer vim over
  nano" / "I prefer nano over vim"): new, and a judge decides. Where the rules see no change of meaning in the move
  (`same_words`), recall shows only the newer of the two until a judge has decided.
- **events** (the episodic wing) are never superseded by another event by rule; a duplicate only when the same
  event is restated (and not "again" / "又" / "再次"). A judge's "update" of an event is applied only where
  `event_may_replace` allows it: a correction word, or nothing that says two occurrences
  (`automem.core.occurrence`).

A few words that only frame the others may be set aside (`set_aside`), and only in a close pair
(`RELAXED_DISTANCE`) whose every other word is matched: a light verb before what the other side says without it
("学打网球" / "学网球"), a class word beside a value of its class on both sides ("代码编辑器是Neovim" /
"写代码用Neovim"), a naming word before a name both give ("a brother called Sam" / "Sam is the user's brother").

Every pair within the related distance that is not a same-wording restatement (only frame words or punctuation
differ, the words in the same order) is `borderline`: with a judge configured, it decides them. Why not a bare
distance threshold: with the offline encoder, "项目用Python 3.11" vs "项目改用Python 3.12" is 0.03 apart, closer than
most paraphrases, and "allergic to bees" vs "allergic to wasps" 0.08 (see reference/embeddings.md): distance only
says "same topic".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from .analysis import (
    Analysis,
    Overlap,
    _other_subject,
    _repeats,
    _same_holder,
    analyse,
    changed_values,
    has_phrase,
    one_slot_replaced,
    overlap,
    polarity_flipped,
    same_wording,
    set_aside,
)
from .occurrence import (
    another_occurrence,
    day_of_month_moved,
    kinds,
    kinds_told,
    may_name_a_day,
    moved_in_time,
    names_a_day,
    names_a_time,
    once_moved,
    people,
    retold_of_its_kind,
    retold_on_its_day,
    stands_in,
    takes_the_place,
    told_as_another,
    told_of_another,
)
from .single_valued import (
    asked_slot,
    holder_named_otherwise,
    maybe_same_slot,
    narrows,
    single_valued_change,
    two_models_owned,
)
from .tokens import CORRECTION, KEPT
from .word_order import order_changed

ACTIONS = ("duplicate", "update", "new")


@dataclass(frozen=True)
class Neighbour:
    """A memory near the candidate: its id, normalised text and cosine distance (1 - cos). `stored`: False for an
    earlier candidate of the same batch (one extraction, whose writer already reconciled what it says)."""

    id: str
    text: str
    distance: float
    stored: bool = True
    by_slot: bool = False  # found by the single-valued attribute both fill, not by distance (`Store.filling`)


@dataclass(frozen=True)
class Thresholds:
    """Cosine distance `related`: beyond it the two texts are about different things, never merged and never put
    to a judge. Within it, distance decides nothing: the offline encoder puts "Python 3.11" and "3.12" closer than
    most paraphrases."""

    related: float

    @classmethod
    def from_config(cls, cfg) -> "Thresholds":
        return cls(cfg.dedup_related_distance)


@dataclass(frozen=True)
class PairVerdict:
    action: str  # duplicate | update | new
    reason: str
    borderline: bool  # the cheap checks are not sure: a judge may settle it
    same_words: bool = False  # kept apart though both say the same words, moved: shown once (the newer)
    far: bool = False  # a question to which only "update" may apply (worded far apart): asked, never linked


@dataclass(frozen=True)
class Verdict:
    action: str  # duplicate | update | new
    matched_id: str | None  # the memory duplicated or updated; for new, the nearest related one (or None)
    reason: str
    borderline: bool  # the rules are not sure: a judge settles it when one is configured
    ask: tuple[str, ...] = ()  # the neighbours to put to the judge, best first
    same_words: bool = False  # new, though `matched_id` says the same words moved: recall shows only the newer
    far: tuple[str, ...] = ()  # the asked ones beyond the related distance with no slot in sight: only "update" counts
    slot_question: str = ""  # the far one that may hold the old value of an attribute the candidate fills


# (candidate, existing, wing) triples -> "duplicate" | "update" | "new" for each, in one batched call.
Judge = Callable[[list[tuple[str, str, str]]], list[str]]


# Cosine distance within which a pair may be taken for a restatement once a word that only frames the others is set
# aside (a light verb, a class word, "called" before a name). Necessary, never sufficient: every other word of both
# sides must still be matched. The offline encoder puts most restatements well inside it (reference/embeddings.md).
RELAXED_DISTANCE = 0.35
# Cosine distance up to which a neighbour beyond the related distance is still looked at, for one thing only: a new
# value of a single-valued slot (`single_valued.single_valued_change`: the same holder and attribute, one value replaced
# by another). The offline encoder puts "用户住在杭州" and "用户搬去了深圳" 0.65 apart and unrelated memories from 0.65;
# the slot's structure, not the distance, decides.
SLOT_DISTANCE = 0.75
# The distance a neighbour found only by the attribute it fills is given (`Neighbour.by_slot`): not measured (the
# write reads no vector for it), and farther than any the vector query returns.
BY_SLOT_DISTANCE = 1.0


# --------------------------------------------------------------------------------------------------------------
# Decisions. Loss first: a wrong duplicate or update destroys a fact for good, a missed one costs a line that a
# judge or `compact` can merge later. So:
#   duplicate  only when nothing of substance on either side is left unmatched;
#   update     only for a new value of the same slot with nothing else changed, and only where the new value
#              excludes the old one: the opposite (negation, antonym), a new quantity, or a change the candidate
#              announces ("改用", "switched to"); a value of the same class alone (trip to city A / holiday in
#              city B, 哥哥 / 姐姐) is not enough;
#   new        everything else, linked to the nearest neighbour so a judge or `compact --judge` can revisit it.
# Events (episodic memories) are never superseded by another event by rule; a judge may, where `event_may_replace` says.

@lru_cache(maxsize=4096)  # a plain function of its arguments: a write decides a candidate again when the lookup
# by attribute (write_path._look_up_slot) or a recheck under the lock adds neighbours
def compare(candidate: str, existing: str, distance: float, th: Thresholds, event: bool = False,
            by_slot: bool = False) -> PairVerdict:
    """How `candidate` relates to one `existing` memory at cosine `distance`. `event`: both are events. `by_slot`:
    `existing` was found only by the single-valued attribute both may fill (no vector query of the write brought it,
    or it is in the other wing), or, for an event, by a date both name: a question for the judge may come of it
    (`asked_slot`, `retold_on_its_day`), nothing else.

    `borderline` is True for every pair within the related distance that is not a same-wording restatement:
    those are the pairs a judge settles when one is configured.
    """
    if by_slot:
        a, b = analyse(existing), analyse(candidate)
        asked = (("maybe this event told in other words, on a date both name" if retold_on_its_day(a, b)
                  else "maybe a correction of this event, worded far apart" if corrects_its_kind(a, b)
                  else _of_its_kind(existing, candidate)) if event else asked_slot(a, b))
        return PairVerdict("new", asked or f"different topic (distance {distance:.2f})", bool(asked), far=bool(asked))
    if distance > th.related:
        if (event and distance <= SLOT_DISTANCE
                and (announces_correction(candidate, existing) or says_the_rest_holds(candidate, existing))
                and not told_of_another(analyse(existing), analyse(candidate))):
            # "Yoga's cancelled — the studio is closed for repairs" / "The user has a yoga class Thursday at 7am",
            # 0.66 apart: only a judge can tell which event it corrects, and only its "update" applies
            return PairVerdict("new", "maybe a correction of this event, worded far apart", True, far=True)
        if (event and distance <= SLOT_DISTANCE and may_name_a_day(existing)
                and retold_on_its_day(analyse(existing), analyse(candidate))):
            # "I'm on PTO 7/7 through 7/18" / "The user is on vacation from July 7 to July 18", 0.66 apart: the
            # day both name is all that ties them; a reading judge's "duplicate" or "update" applies
            return PairVerdict("new", "maybe this event told in other words, on a day both name", True, far=True)
        asked = _of_its_kind(existing, candidate) if event and distance <= SLOT_DISTANCE else ""
        if asked:  # "下礼拜我休年假" / "The user is on vacation next week"; a thesis defense on another date
            return PairVerdict("new", asked, True, far=True)
        if distance <= SLOT_DISTANCE and not event:
            a, b = analyse(existing), analyse(candidate)
            why = single_valued_change(a, b)
            if why:
                return PairVerdict("update", why, True)
            maybe = maybe_same_slot(a, b)
            if maybe:  # too far for the rules to decide, near enough for the judge to be asked
                return PairVerdict("new", maybe, True)
        if distance <= SLOT_DISTANCE and not event:
            asked = asked_slot(analyse(existing), analyse(candidate))
            if asked:  # worded too far apart for any rule: the judge is asked whether it is the new value
                return PairVerdict("new", asked, True, far=True)
        return PairVerdict("new", f"different topic (distance {distance:.2f})", False)
    a, b = analyse(existing), analyse(candidate)
    if same_wording(a, b):
        if order_changed(a, b):
            return PairVerdict("new", "the same words in another order or role", True)
        if _substance(a) != _substance(b):
            # the same words moved, and no order or role change the rules can see; but one they cannot see ("works
            # night shifts on weekdays and day shifts on weekends" / "day shifts on weekdays and night shifts on
            # weekends") would be a fact lost for good. A judge decides; without one both are kept, linked, and
            # recall shows only the newer (`same_words`) until one does.
            return PairVerdict("new", "the same words moved (a judge decides whether the meaning changed)", True,
                               same_words=True)
        return PairVerdict("duplicate", "the same words (only frame words or punctuation differ)", False)
    values = changed_values(a, b)
    flipped, flip_reason = polarity_flipped(a, b)
    ov = overlap(a, b)
    if event and _repeats(b) != _repeats(a):
        return PairVerdict("new", "another occurrence of the event (said to happen again)", True)
    if not values and not flipped:
        if ov.shared > 0:
            how = "in other words" if ov.comparable else "in another language"
            restated = ""
            if not ov.unmatched:
                restated = f"restated {how}: every word of each side matched"
            elif says_less(a, b, ov, event):
                restated = f"restated {how}, with less detail ({ov.differ()})"
            else:
                aside = set_aside(a, b, ov) if distance <= RELAXED_DISTANCE else None
                if aside:
                    restated = f"restated {how}: every word matched once {'; '.join(aside)} ({ov.differ()})"
            if restated and order_changed(a, b):
                return PairVerdict("new", f"the same words in another order or role ({ov.differ()})", True)
            if restated:
                return PairVerdict("duplicate", restated, True)
        if not event and b.strong_change and not a.strong_change and one_slot_replaced(a, b) and not narrows(a, b):
            return PairVerdict("update", f"announced as a change of one slot ({ov.differ()})", True)
        why = "" if event else single_valued_change(a, b)
        if why:
            return PairVerdict("update", f"{why} ({ov.differ()})", True)
        return PairVerdict("new", f"a different fact ({ov.differ()})", True)
    change = "; ".join(values) or f"the opposite: {flip_reason}"
    if event:
        return PairVerdict("new", f"another event ({change})", True)
    why = slot_change(a, b, values, flipped) or single_valued_change(a, b)
    if why:
        return PairVerdict("update", f"{why} ({change})", True)
    return PairVerdict("new", f"both may be true ({change}; {ov.differ()})", True)


def _substance(x: Analysis) -> list[str]:
    """The words that are not frame words, in order."""
    return [u.surface or u.key for u in x.units if u.kind != "frame"]


def slot_change(a: Analysis, b: Analysis, values: list[str], flipped: bool) -> str:
    """Why `b` replaces `a` (the same slot, a value that excludes the old one), or "" when nothing says so."""
    if not _same_holder(a, b):
        return ""  # one subject's slot: "The user switched to emacs" never replaces "Colleague No. 2 uses vim"
    # a switch said for one use ("测试时改用Firefox") is not of the value of record
    announced = b.strong_change and not a.strong_change and not narrows(a, b)
    rest = overlap(a, b, ignore=[v.split(" ", 1)[0] for v in values])
    if flipped and not values:
        return "" if rest.unmatched else "the opposite of the same fact"
    if flipped:
        return ""
    if len(values) > 1:
        return ""  # two kinds of value changed (a cat named Luna / a dog named Milo): two slots, maybe two things
    changed_numbers = {n for v in values if v.startswith("num ") for n in re.split(r"[ /]|->", v[4:]) if n}
    if changed_numbers & (a.identifiers | b.identifiers):
        return ""  # the number says which one (room 305 / room 207): another thing, not a new value
    if two_models_owned(a, b):
        return ""  # a Raspberry Pi 4 and a Pi 5: two things owned
    if not rest.unmatched:
        if changed_numbers:
            return "a new number for the same slot"
        if announced:
            return "announced as a change of the same slot"
        return ""
    if announced and one_slot_replaced(a, b):
        return "announced as a change of one slot"
    return ""


def says_less(a: Analysis, b: Analysis, ov: Overlap, event: bool) -> bool:
    """The candidate `b` says nothing the stored `a` does not: all of it matched, and what only `a` says are values
    (a number, a name, a place: details of the same statement), not another subject ("the user's daughter"), and
    neither text negates (not liking coffee with milk is not not liking coffee). Storing nothing loses nothing.
    Not for events: a less detailed event may be another occurrence."""
    if event or ov.only_b_keys or not ov.only_a_keys or a.negations or b.negations:
        return False
    subject = _other_subject(a)
    if subject is not None and subject in ov.only_a_keys:
        return False
    if {f"num:{n}" for n in a.identifiers} & set(ov.only_a_keys):
        return False  # "北极星项目1" beside "北极星项目": the number says which project, it is no detail
    return all(":" in k for k in ov.only_a_keys)  # "class:value" keys; content words and concepts are not details


_RANK = {"duplicate": 0, "update": 1}


def _of_its_kind(existing: str, candidate: str) -> str:
    """The question a stored event of a kind the candidate tells too is asked however far its wording, found by the
    kind or near enough: the same event at a time both name (`occurrence.retold_of_its_kind`), or one a holder has
    once on another date (`occurrence.once_moved`); "" for none. The kinds are read from the texts first, so a far
    event of another kind is not analysed."""
    if not kinds_told(existing) & kinds_told(candidate):
        return ""
    a, b = analyse(existing), analyse(candidate)
    if retold_of_its_kind(a, b):
        return "maybe this event told in other words, at a time both name"
    return "maybe this event moved to another date" if once_moved(a, b) else ""


def decide(candidate: str, neighbours: Sequence[Neighbour], th: Thresholds, event: bool = False) -> Verdict:
    """The candidate's relation to its nearest stored memories (sorted by distance).

    A duplicate of any neighbour wins (nothing to store; the same-wording one first), then an update (supersede
    that one), nearest first. Nothing matched: new, linked to the nearest neighbour within the related distance.
    Beyond it, up to SLOT_DISTANCE, a neighbour is looked at for a single-valued slot's new value (an update when
    the rules can tell, else linked and asked like a near one); any other stored one there is only put to a judge,
    if any, after the near ones, and never linked. `ask` lists the neighbours a judge should see: the matched one
    first, then the others by distance.
    """
    best: tuple[tuple, Neighbour, PairVerdict] | None = None
    near: list[Neighbour] = []
    far: list[Neighbour] = []  # beyond `related`, within SLOT_DISTANCE, no slot in sight: asked, never linked
    said: dict[str, PairVerdict] = {}
    # an event looks beyond the related distance only for the event it says it corrects or moves, or, when it
    # names a day, for one told on that day, or, when it tells a kind of event at a time, for one of that kind then
    # (`compare`)
    looks_far = not event or announces_correction(candidate) or says_the_rest_holds(candidate)
    x = analyse(candidate)
    far_too = looks_far or names_a_day(x) or (kinds(x) and names_a_time(x))
    cap = max(th.related, SLOT_DISTANCE) if far_too else th.related
    for n in neighbours:
        if n.distance > cap and not n.by_slot:
            continue
        v = said[n.id] = compare(candidate, n.text, n.distance, th, event=event, by_slot=n.by_slot)
        if v.far or n.by_slot:  # worded far apart, or found only by the attribute: asked, never linked
            if n.stored and v.far:
                far.append(n)
        elif n.distance <= th.related or v.borderline:  # beyond `related` only a possible slot change is linked
            near.append(n)
        elif n.stored and looks_far:
            far.append(n)
        if v.action in _RANK:
            rank = (_RANK[v.action], v.borderline, n.distance)
            if best is None or rank < best[0]:
                best = (rank, n, v)
    near.sort(key=lambda n: n.distance)
    # a question about the same slot first; for an event, one found by a date or kind both name before one that is
    # only near enough (a judge sees the first few)
    far.sort(key=lambda n: (not said[n.id].borderline, not (event and n.by_slot), n.distance))
    far_ids = tuple(m.id for m in far)
    question = next((m.id for m in far if said[m.id].far), "")
    if best is not None:
        _, n, v = best
        ask = _asked(n, near + far, question) if v.borderline else ()
        return Verdict(v.action, n.id, f"{v.reason} (distance {n.distance:.2f})", v.borderline, ask, far=far_ids)
    if near:
        # linked to the nearest, or to one that says the same words moved (recall shows only the newer of those)
        n, v = next(((n, said[n.id]) for n in near if said[n.id].same_words), (near[0], said[near[0].id]))
        return Verdict("new", n.id, f"{v.reason} (distance {n.distance:.2f})", True, _asked(n, near + far, question),
                       v.same_words, far_ids, question)
    if far:
        # A single-valued fact changed in words no rule ties to the old ones ("The user banks with Chase" / "moved
        # every account over to Capital One", 0.67 apart; unrelated memories start about 0.65): a judge, when there
        # is one, compares them in the call it makes anyway. Without one they stay unlinked (nothing says they meet),
        # and the write path notes the nearest for the next judge (`maybe_updates`, automem.core.memory).
        # Only stored memories: what one extraction says at once, its writer has reconciled already.
        v, n = said[far[0].id], far[0]
        where = ("found by the attribute" if n.by_slot and n.distance >= BY_SLOT_DISTANCE
                 else f"distance {n.distance:.2f}")
        why = (f"{v.reason} ({where}; put to a judge, if any)" if v.borderline else
               f"no stored memory is about this (the nearest {far[0].distance:.2f} away is put to a judge, if any)")
        return Verdict("new", None, why, True, far_ids, far=far_ids)
    return Verdict("new", None, "no stored memory is about this", False)


def _asked(first: Neighbour, others: list[Neighbour], question: str) -> tuple[str, ...]:
    """The neighbours a judge should see, best first: the matched or nearest one, then the one that may hold the old
    value of an attribute the candidate fills (a judge sees only the first few), then the rest by distance."""
    rest = [m.id for m in others if m.id != first.id]
    if question and question != first.id:
        rest = [question] + [i for i in rest if i != question]
    return (first.id, *rest)


@dataclass(frozen=True)
class Question:
    """One candidate put to the judge: its text, the rules' verdict, the neighbours (id, text) to compare it with
    (best first) and its wing (an episodic memory is an event)."""

    candidate: str
    verdict: Verdict
    neighbours: tuple[tuple[str, str], ...]
    wing: str = "user"


def settle(questions: Sequence[Question], judge: Judge | None) -> list[Verdict]:
    """Let `judge` decide the questions, in one batched call (`ask`).

    Per candidate: the first neighbour judged a duplicate wins, then the first judged an update, else new when
    every answer says so; each answer as `ask` lets it apply. A missing or unusable answer leaves the rules'
    verdict. Exceptions from the judge propagate: the caller logs them and keeps the rules' verdicts.
    """
    verdicts = [q.verdict for q in questions]
    pairs: list[Asked] = []
    spans: list[tuple[int, int]] = []
    for q in questions:
        start = len(pairs)
        pairs.extend(Asked(q.candidate, text, q.wing, nid in q.verdict.far) for nid, text in q.neighbours if text)
        spans.append((start, len(pairs)))
    if judge is None or not pairs:
        return verdicts
    answers, discerning = ask(judge, pairs)
    for i, (q, (start, stop)) in enumerate(zip(questions, spans)):
        if start == stop:
            continue
        ids = [nid for nid, text in q.neighbours if text]
        said = answers[start:stop]
        for action in ("duplicate", "update"):
            if action in said:
                j = said.index(action)
                far = pairs[start + j].far
                told = " (worded far apart; the judge told the control pair apart)" if far and discerning else ""
                # `far` names the matched one when it was far: the write path keeps such a duplicate, merged
                verdicts[i] = Verdict(action, ids[j], f"judge: {action}{told} ({q.verdict.reason})", False,
                                      far=(ids[j],) if far else ())
                break
        else:
            if all(s == "new" for s in said):
                verdicts[i] = Verdict("new", q.verdict.matched_id, f"judge: new ({q.verdict.reason})", False)
    return verdicts


@dataclass(frozen=True)
class Asked:
    """One pair put to the judge: the candidate (the newer), the stored memory, its wing, and whether the two are
    worded far apart (asked mainly for a changed value: `Verdict.far`, a waiting pair's `maybe_updates`)."""

    candidate: str
    existing: str
    wing: str = "user"
    far: bool = False


def ask(judge: Judge, pairs: Sequence[Asked]) -> tuple[list[str], bool]:
    """Put `pairs` to `judge` in one call: (its answer to each as the write path may apply it, whether it told the
    control pair apart). The write path (`settle`) and `automem compact --judge` both ask this way.

    A "duplicate" for a far pair, an "update" of an event told again with only its day or time otherwise or worded
    far from it, and an "update" where one side names the holder by relation and the other by name
    (`single_valued.holder_named_otherwise`) rest on the judge's word alone: each counts only from a judge that, in
    the same call, tells one of those candidates from a plain fact about the world (the control pair, added to the
    call whenever such a pair or an event is in it). A judge that says the same to everything, or answers fewer
    pairs than it was sent, does not; its answers there count as "new". An event supersedes another only where
    `event_may_replace` says so.
    Answers other than duplicate, update or new come back as "" (no answer)."""
    sent = [(p.candidate, p.existing, p.wing) for p in pairs]
    unsure = [holder_named_otherwise(analyse(p.existing), analyse(p.candidate)) for p in pairs]
    control = next((p for p, u in zip(pairs, unsure) if p.wing == "episodic" or p.far or u), None)
    if control is not None:
        sent.append((control.candidate, control_for(control.candidate), control.wing))
    answers = [str(a).strip().lower() for a in (judge(sent) or [])][:len(sent)]
    answers = [a if a in ("duplicate", "update", "new") else "" for a in answers]
    answers += [""] * (len(sent) - len(answers))
    discerning = control is not None and answers[-1] == "new"
    return [_allowed(p, a, discerning, u) for p, a, u in zip(pairs, answers, unsure)], discerning


# Plain facts about the world, put beside a candidate as the control pair (`ask`): no memory of a person restates or
# updates one, so a judge that is reading the pairs answers "new". The first that shares no word with the candidate.
CONTROLS = {"en": (("Mount Everest stands on the border between Nepal and China.", ("everest", "nepal")),
                   ("At sea level, water boils at 100 degrees Celsius.", ("boil", "water"))),
            "zh": (("珠穆朗玛峰位于中国和尼泊尔的边境上。", ("珠穆朗玛", "珠峰", "尼泊尔")),
                   ("在海平面上，水的沸点是100摄氏度。", ("沸", "水")))}
_CJK = re.compile(r"[\u3400-\u9fff]")


def control_for(candidate: str) -> str:
    """The control pair's other side for `candidate` (`ask`), in its language."""
    choices = CONTROLS["zh" if _CJK.search(candidate) else "en"]
    low = candidate.lower()
    return next((text for text, words in choices if not any(w in low for w in words)), choices[-1][0])


def _allowed(p: Asked, answer: str, discerning: bool, holder_unsure: bool) -> str:
    """The judge's `answer` about `p` as the write path may apply it: "new" where it may not (`ask`)."""
    if answer == "duplicate" and p.far and not discerning:
        return "new"
    if answer == "update" and p.wing == "episodic" and (
            not event_may_replace(p.candidate, p.existing, discerning) or (p.far and not discerning)):
        return "new"  # an event worded far from the candidate is corrected only on a reading judge's word
    if answer == "update" and holder_unsure and not discerning:
        return "new"  # maybe another person's value: only a reading judge can tell
    return answer


def event_may_replace(candidate: str, existing: str, discerning: bool = False) -> bool:
    """Whether a judge's "update" may let one event supersede another: when the candidate announces the change (a
    planned event moved or called off: "the dentist appointment was moved to Thursday", "deadline 延到了下周三"), says
    it corrects what was said ("the dinner was actually on Saturday", "之前记错了"; lexicon `change.correction`, a word
    the stored one does not say too, with no one and no past period the stored one does not name beside it: "my wife's
    party got pushed", "上周日爬山泡汤了", `occurrence.told_of_another`), or both tell one occurrence in the same words,
    moved ("flew from Tokyo to Seoul last Friday" / "from Seoul to Tokyo last Friday"), or it says what stays as it was
    ("they need me in on the 6th, same time": `says_the_rest_holds`), of the same people, and nothing says two
    occurrences outright; otherwise only when nothing in the pair says they are two occurrences
    (`occurrence.another_occurrence`: "again", "also", another ordinal, year or release, another person, another period,
    more than one detail changed). A deploy of 1.4.1 does not undo the deploy of 1.4.0, whatever a judge says; "dinner
    with Sam at Nopa on Friday" / "at Zuni on Friday" is one dinner, told wrong once.
    A `discerning` judge (it told the control pair apart: `settle`) is also taken at its word where the candidate tells
    the stored event again with only its day or time otherwise and nothing added (`occurrence.moved_in_time`: "Book
    club's on Thursday night" / "The user's book club meets Wednesday evening this week"), and where it says what
    changed and names one more person on the stored day (`occurrence.stands_in`: "用户4月2日和妈妈一起去体检" /
    "4月2号体检我爸陪我去，我妈那天走不开") or someone going in another's place (`occurrence.takes_the_place`: "Jake
    bailed on Coldplay, so my cousin Priya is taking his ticket")."""
    a, b = analyse(existing), analyse(candidate)
    if (announces_correction(candidate, existing) and not told_of_another(a, b)) or same_wording(a, b):
        return True
    if says_the_rest_holds(candidate, existing) and not told_as_another(a, b) and people(a) == people(b):
        return True  # "they need me in on the 6th, same time": told against one known event, it corrects it
    if discerning and (stands_in(a, b) or takes_the_place(a, b)) and announces_correction(candidate, existing):
        return True  # "我爸陪我去，我妈那天走不开", "my cousin is taking his ticket": another in one's place
    return not another_occurrence(a, b) or (discerning and (moved_in_time(a, b) or retold_on_its_day(a, b)
                                                            or day_of_month_moved(a, b) or once_moved(a, b)))


def corrects_its_kind(a: Analysis, b: Analysis) -> bool:
    """Whether the candidate event `b` says it corrects, calls off or moves an event of a kind the stored `a` is too
    ("flight's cancelled, driving instead" / "The user has a flight to Denver on November 3"), naming no one and no past
    period `a` does not: one the write finds by its kind (`occurrence.kinds`) however far its wording, for a judge to
    tell; only a reading judge's "update" applies."""
    return (bool(kinds(a) & kinds(b)) and (announces_correction(b.text, a.text) or says_the_rest_holds(b.text, a.text))
            and not told_of_another(a, b))


def announces_correction(candidate: str, existing: str = "") -> bool:
    """Whether `candidate` says it corrects or moves what was told (lexicon `change.correction`): a word `existing`
    does not say too, for one both say is what both events are about ("delayed three hours", "改成了十分钟")."""
    return _says_anew(candidate, existing, "correction")


def says_the_rest_holds(candidate: str, existing: str = "") -> bool:
    """Whether `candidate` says what of the event stays as it was ("same time", "地点不变"; lexicon `change.kept`), a
    word `existing` does not say too: it retells an event already known, so what it gives otherwise is a correction."""
    return _says_anew(candidate, existing, "kept")


def _says_anew(candidate: str, existing: str, which: str) -> bool:
    """Whether `candidate` says one of the `which` phrases that `existing` does not say too."""
    said = _phrases_said(candidate, which)
    return bool(said - _phrases_said(existing, which)) if said and existing else bool(said)


@lru_cache(maxsize=4096)  # a write asks it of one candidate against each neighbour, and of each neighbour again
def _phrases_said(text: str, which: str) -> frozenset[str]:
    said = frozenset(p for p in {"correction": CORRECTION, "kept": KEPT}[which] if has_phrase(text, p))
    if which == "correction" and _NOT_TILL.search(text):
        said |= {"not ... till"}
    return said


# Put off to a later day, told by what cannot happen before it: "they can't get to my car till friday", "won't be
# ready until the 9th", "要到周五才能修"
_NOT_TILL = re.compile(r"(?:\b(?:can't|cant|can’t|cannot|can not|won't|wont|won’t|not)\b[^.,;!?，。；！？]{0,40}?"
                       r"\b(?:till|until|til)\b)|(?:要到|得到|等到)[^，。；！？,.;!?]{1,8}?才", re.IGNORECASE)


def explain(candidate: str, existing: str) -> dict:
    """The units and signals of a pair, for the evaluation script and for debugging a decision."""
    a, b = analyse(existing), analyse(candidate)
    ov = overlap(a, b)
    return {"existing": [(u.kind, u.key) for u in a.units], "candidate": [(u.kind, u.key) for u in b.units],
            "changed_values": changed_values(a, b), "polarity": polarity_flipped(a, b)[1],
            "same_wording": same_wording(a, b), "shared": ov.shared, "differ": ov.differ(),
            "comparable": ov.comparable}
