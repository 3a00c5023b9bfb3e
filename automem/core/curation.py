"""What a person does to memories by hand, by id: pin, unpin and forget, with the checks every caller shares (the
CLI's `pin` / `unpin` / `forget`, the dashboard's Memory tab). Plain functions over a Store; a refusal is a
UsageError with one line that says why (NotFound for an unknown id).
"""

from __future__ import annotations

import time
from typing import Sequence

from ..errors import NotFound, UsageError
from .history import record_pinned
from .memory import HELD, OWNER, Memory

PINNABLE_WINGS = ("user", "instruction")  # only these enter the system-prompt block


def resolve_own(store, ids: Sequence[str], profile: str, scope: str, verb: str) -> list[Memory]:
    """The memories `ids` names, as `pin` / `unpin` may change them: active, and of `profile` and `scope` (a pin is
    a mark on the memory itself, so only its own profile and person set it). UsageError otherwise."""
    ids = list(dict.fromkeys(ids))
    found = {m.id: m for m in store.get(ids)}
    missing = [i for i in ids if i not in found or found[i].status == "forgotten"]
    if missing:
        raise NotFound(f"no memory with id {', '.join(missing)} (see `automem list`)")
    held = [i for i in ids if found[i].status == HELD]
    if held:
        raise UsageError(f"{', '.join(held)} {'is' if len(held) == 1 else 'are'} held for review, not stored yet "
                         f"(`automem review --accept ID` stores it)")
    inactive = [i for i in ids if found[i].status != "active"]
    if inactive:
        raise UsageError(f"{', '.join(inactive)} {'is' if len(inactive) == 1 else 'are'} not active (superseded: "
                         f"{verb} the memory that replaced {'it' if len(inactive) == 1 else 'them'})")
    others = [i for i in ids if found[i].profile != profile or found[i].scope != scope]
    if others:
        m = found[others[0]]
        whose = f"profile {m.profile}" + (f", {m.scope}" if m.scope else " (the owner)")
        again = f"automem {verb} {m.id} --profile {m.profile}" + (f" --user {m.scope}" if m.scope else "")
        raise UsageError(f"{m.id} is a memory of {whose}, not of this --profile / --user; {verb} it there: `{again}`")
    return [found[i] for i in ids]


def set_pinned(store, ids: Sequence[str], profile: str, scope: str, value: bool,
               now: int | None = None) -> tuple[list[Memory], set[str]]:
    """Pin (or unpin) memories of `profile` / `scope`: (the memories, the ids whose mark changed). The read and the
    write happen under the store's write lock, so no other writer's change is overwritten; the time goes into the
    memory's history (`pinned_at` / `unpinned_at`)."""
    verb = "pin" if value else "unpin"
    with store.lock():
        mems = resolve_own(store, ids, profile, scope, verb)
        if value and any(m.wing not in PINNABLE_WINGS for m in mems):
            episodic = [m.id for m in mems if m.wing not in PINNABLE_WINGS]
            raise UsageError(f"{', '.join(episodic)}: only persona (user) and instruction memories enter the "
                             f"system-prompt block; an episodic one is recalled when relevant")
        changed = [m for m in mems if bool(m.pinned) != bool(value)]
        now = int(now if now is not None else time.time())
        for m in changed:
            record_pinned(m, 1 if value else 0, now)  # the mark and its time (its history), in one write
        store.update_metadata(changed)
    return mems, {m.id for m in changed}


def forget_ids(store, ids: Sequence[str], scope: str | None = None, who: str = "") -> dict[str, bool]:
    """Forget memories for good (`Store.forget`: every copy goes). {id: whether it was forgotten now (False: it was
    already)}. An unknown id refuses the whole call, and so does one outside `scope` when a scope is given (a
    person's view forgets only that person's memories; None: any memory). `who` names that scope in the refusal."""
    ids = list(dict.fromkeys(ids))
    found = {m.id: m for m in store.get(ids)}
    tombstoned = {t["id"] for t in store.tombstones()} if len(found) < len(ids) else set()
    missing = [i for i in ids if i not in found and i not in tombstoned]
    if missing:
        raise NotFound(f"no memory with id {', '.join(missing)} (see `automem list --all`)")
    if scope is not None:
        others = [i for i in ids if i in found and found[i].scope != scope]
        if others:
            raise UsageError(f"{', '.join(others)} not in {who or scope or 'the owner'}'s memories (leave out --user "
                             f"to forget any memory)")
    changed = set(store.forget(ids))
    return {i: i in changed for i in ids}


__all__ = ["resolve_own", "set_pinned", "forget_ids", "OWNER", "PINNABLE_WINGS"]
