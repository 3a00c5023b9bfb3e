"""Pairs an earlier write kept apart for lack of a judge: the newer memory names the older in its `related_to`
(close: any answer applies) or its `maybe_updates` (far: only an update does; automem.core.memory). Which of them a
writer may settle (`waiting_pairs`, `find_waiting`), and how many wait in the whole store (`waiting_for_judge`,
`automem stats`). The write path puts them to the judge (automem.core.write_path: `remember`, `settle_waiting`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .candidate import waits_for, writable
from .dedup import Verdict
from .memory import OWNER, Memory


@dataclass
class Waiting:
    """A pair an earlier write kept apart for lack of a judge: `newer` names `older` in its `related_to`, or, `far`,
    in its `maybe_updates`."""

    newer: Memory
    older: Memory
    verdict: Verdict | None = None  # the judge's answer, once asked
    far: bool = False  # no word or slot in common: asked whether `newer` updates `older`, nothing else applies


def waiting_pairs(store, profile: str, scopes: Sequence[str] = (OWNER,),
                  limit: int | None = None) -> list[tuple[Memory, Memory]]:
    """(newer, older) pairs kept apart for lack of a judge that a write of `profile` speaking for `scopes` may
    settle, oldest first: both active, in one wing and scope, visible to it without crossing people (the recall
    index finds them; the store confirms each)."""
    return [(w.newer, w.older) for w in find_waiting(store, [(profile, s) for s in scopes], limit)]


def waiting_for_judge(store) -> dict[str, int]:
    """{profile: pairs kept apart for lack of a judge} over the whole store (`automem stats`)."""
    from . import index

    store.ensure_index()
    return index.count_waiting(store.location)


def find_waiting(store, writers: Sequence[tuple[str, str]], limit: int | None) -> list[Waiting]:
    from . import index

    if limit is not None and limit <= 0:
        return []
    store.ensure_index()
    rows = []
    for scope in dict.fromkeys(s for _, s in writers):
        rows += index.waiting(store.location, scope=scope)
    found = {m.id: m for m in store.get(list(dict.fromkeys(i for r in rows for i in r[:2])))}
    out: list[Waiting] = []
    taken: set[str] = set()  # every memory of a pair chosen so far
    olders: set[str] = set()
    for newer_id, older_id, *_ in rows:
        newer, older = found.get(newer_id), found.get(older_id)
        # A memory is in one pair at a time, but for a newer one's two links (close and far): answered in one call,
        # they apply in turn, and a merge of the first leaves the second nothing to do (its newer is gone).
        if newer is None or older is None or newer_id in olders or older_id in taken:
            continue
        far = next((f for i, f in waits_for(newer) if i == older_id), None)
        if far is None:
            continue  # the index is behind the store
        if not any(writable(newer, p, s, newer.wing, store.config)
                   and writable(older, p, s, older.wing, store.config) for p, s in writers):
            continue  # another profile's or person's pair: never judged for this writer
        out.append(Waiting(newer, older, far=far))
        taken.update((newer_id, older_id))
        olders.add(older_id)
        if limit is not None and len(out) >= limit:
            break
    return out


def settled_json(w: Waiting) -> dict:
    v = w.verdict
    return {"newer": w.newer.id, "older": w.older.id, "answer": v.action if v else "", "reason": v.reason if v else ""}
