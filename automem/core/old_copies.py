"""The old copies an update supersedes besides the memory it matched: the other active memories of the writer's
group that still hold the value the update replaces (`old_copies`), found among the candidate's near neighbours
and along `related_to` links. When a value changes, every copy of the old value goes.
"""

from __future__ import annotations

from typing import Sequence

from .analysis import analyse, changed_values, overlap, polarity_flipped
from .candidate import EVENT_WING, RELATED_TO, Candidate, writable
from .dedup import Neighbour, Thresholds, compare
from .memory import Memory

# How many memories one update may supersede besides the one it matched (a cluster of restatements of the old value
# is a handful; the bound keeps a chain of links from walking a whole profile).
MAX_OLD_COPIES = 12


def old_copies(store, new_text: str, new_id: str, writer: Candidate, old: Memory, neighbours: Sequence[Neighbour],
               answers: dict, thresholds: Thresholds, current) -> list[Memory]:
    """The other active memories of the writer's group that still hold the value `new_text` replaces in `old`.

    Looked for among the candidate's near neighbours and along `related_to` links from `old` (both ways, a few
    steps). One is a copy when the judge called it an update by the new text too; or, by the rules, when the new
    text updates it, when it restates `old`, or when it is linked to the cluster and the new text changes the same
    value in it ("项目使用Python 3.11版本" beside "项目统一使用Python 3.11", then "we moved to Python 3.12"). The
    judge's "new" or "duplicate" for a pair keeps that memory: the judge knows best."""
    if writer.wing == EVENT_WING or old.wing == EVENT_WING:
        return []
    change = set(changed_values(analyse(old.text), analyse(new_text)))
    near = [n for n in neighbours if n.distance <= thresholds.related and n.id not in (old.id, new_id)]
    _read_many(current, [n.id for n in near] + [str(old.extra.get(RELATED_TO) or "")])
    pool: dict[str, tuple[Memory, float, bool]] = {}  # id -> (memory, distance, linked to the cluster)
    for n in near:
        m = current(n.id)
        if m is not None:
            pool[n.id] = (m, n.distance, False)
    links = _Links(store, writer, old.wing)
    # the cluster is mostly the old memory's link and its near neighbours: usually one read for the whole walk
    links.prefetch([old.id, str(old.extra.get(RELATED_TO) or "")] + list(pool))
    members: list[Memory] = []
    frontier, seen = [old], {old.id, new_id}
    while frontier and len(seen) < MAX_OLD_COPIES + 2:
        m = frontier.pop()
        linked = [x for x in ([current(str(m.extra.get(RELATED_TO) or ""))] if m.extra.get(RELATED_TO) else [])
                  if x is not None]
        to_m = links.to(m.id)
        _read_many(current, [], to_m)
        linked += to_m
        for x in linked:
            x = current(x.id) or x
            if x.id in seen:
                continue
            seen.add(x.id)
            dist = pool[x.id][1] if x.id in pool else thresholds.related
            pool[x.id] = (x, dist, True)
            if _holds_old_value(new_text, x, old, dist, True, change, answers, thresholds):
                members.append(x)
                frontier.append(x)
    for mid, (m, dist, linked) in pool.items():
        if mid not in seen and _holds_old_value(new_text, m, old, dist, linked, change, answers,
                                                                      thresholds):
            members.append(m)
    return [m for m in members[:MAX_OLD_COPIES]
            if writable(m, writer.profile, writer.scope, old.wing, store.config)]


def _holds_old_value(new_text: str, m: Memory, old: Memory, distance: float, linked: bool, change: set[str],
                     answers: dict, thresholds: Thresholds) -> bool:
    said = answers.get((new_text, m.text))
    if said in ("new", "duplicate"):
        return False
    if said == "update":
        return True
    if compare(new_text, m.text, distance, thresholds).action == "update":
        return True
    if compare(m.text, old.text, thresholds.related, thresholds).action == "duplicate":
        return True  # a restatement of the old memory: the update changes it too
    return (linked and bool(change) and change <= set(changed_values(analyse(m.text), analyse(new_text)))
            and _restates_loosely(analyse(m.text), analyse(old.text)))


def _restates_loosely(a, b) -> bool:
    """`a` says what `b` says, give or take a word that only names the slot ("版本", "version"): no value changed,
    neither negates the other, and what is left unmatched is on one side only and only concepts (never a value or a
    content word: "部署在AWS" is a fact of its own, and "works in" beside "lives in" another slot)."""
    ov = overlap(a, b)
    if changed_values(a, b) or polarity_flipped(a, b)[0] or (ov.only_a_keys and ov.only_b_keys):
        return False
    concepts = a.concepts | b.concepts
    return ov.shared > 0 and all(k in concepts for k in ov.only_a_keys + ov.only_b_keys)


class _Links:
    """The active memories of the writer's group whose `related_to` names a given id, newest first (what
    `store.list(profile, wing, where={RELATED_TO: id}, scopes=(scope,), inherit=False)` returns), read for many ids
    at once (`Store.linked_to`: the recall index, or Chroma asked for the link alone; the same visibility rule)."""

    def __init__(self, store, writer: Candidate, wing: str) -> None:
        self.store = store
        self.visible = store.where(writer.profile, wing=wing, scopes=(writer.scope,), inherit=False)
        self.found: dict[str, list[Memory]] = {}

    def prefetch(self, ids: Sequence[str]) -> None:
        wanted = [i for i in dict.fromkeys(ids) if i and i not in self.found]
        if not wanted:
            return
        for i in wanted:
            self.found[i] = []
        for m in self.store.linked_to(wanted, self.visible):
            target = str(m.extra.get(RELATED_TO) or "")
            if target in self.found:
                self.found[target].append(m)
        for i in wanted:
            self.found[i].sort(key=lambda m: (m.updated_at or m.created_at, m.created_at, m.id), reverse=True)
            del self.found[i][MAX_OLD_COPIES:]

    def to(self, mid: str) -> list[Memory]:
        self.prefetch([mid])
        return list(self.found[mid])


def _read_many(current, ids: Sequence[str], records: Sequence[Memory] = ()) -> None:
    """Let `current` read `ids` in one store read (and take `records`, just read, as they are) where it can."""
    many = getattr(current, "many", None)
    if many is not None:
        many(ids, records)
