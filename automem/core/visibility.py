"""Who may see what. The rule, in one sentence: the owner reads everything of the profile plus the shared wings of
every profile (the owner's instructions); anyone else reads only their own (and their chat's) memories of the
profile, plus the owner's instructions the owner confirmed for everyone (audience "everyone", `automem share`).
The owner's persona, events and unconfirmed instructions never reach anyone else.

Plain functions that build Chroma `where` filters (and check one record against them); forgotten and superseded
memories are never visible, and a memory held for the owner's review (status "held", automem.core.review) is not even
among the hidden ones an admin view lists: only `automem review` shows it.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence


def _and(clauses: list[dict]) -> dict:
    clauses = [c for c in clauses if c]
    if not clauses:
        return {}
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _or(clauses: list[dict]) -> dict:
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


OWNER = ""  # the owner's scope (see automem.core.memory)
HELD = "held"  # automem.core.memory.HELD: held for the owner's review, never listed with the others
INHERITED_WING = "instruction"  # the owner's memories everyone else may read: standing instructions only...
EVERYONE = "everyone"  # ...and of those only the ones confirmed for everyone (automem.core.memory.AUDIENCE_EVERYONE)


def _in(key: str, values: Sequence[str]) -> dict:
    return {key: values[0]} if len(values) == 1 else {key: {"$in": list(values)}}


# A reader may also read an old scope string up to a time: "before:<unix time>:<scope>" in its scopes reads the
# memories of <scope> created before then. (Gateway ids once mapped to scopes with collisions; an id whose scope
# string changed reads what was written for it under the old string, and nothing that string's owner writes later.)
# No scope starts with "before:" (scopes are "", "user:...", "chat:...", "session:...").
LEGACY = "before:"


def legacy_read(scope: str, before: int) -> str:
    """The scopes entry that reads `scope`'s memories created before `before` (unix seconds)."""
    return f"{LEGACY}{int(before)}:{scope}"


def split_scopes(scopes: Sequence[str]) -> tuple[list[str], list[tuple[str, int]]]:
    """(plain scopes, [(old scope, before)]) of a reader's scopes."""
    plain, old = [], []
    for s in scopes:
        if s.startswith(LEGACY):
            t, _, scope = s[len(LEGACY):].partition(":")
            try:
                old.append((scope, int(t)))
            except ValueError:
                continue  # unreadable: reads nothing
        else:
            plain.append(s)
    return plain, old


def _scopes_clause(scopes: Sequence[str]) -> dict:
    plain, old = split_scopes(scopes)
    clauses = ([_in("scope", plain)] if plain else []) + [
        {"$and": [{"scope": scope}, {"created_at": {"$lt": before}}]} for scope, before in old]
    return _or(clauses) if clauses else {"scope": {"$in": []}}


def visible_where(profile: str | None, shared_wings: Iterable[str], wing: str | None = None,
                  wings: Iterable[str] | None = None, extra: dict | None = None,
                  include_hidden: bool = False, scopes: Sequence[str] | None = (OWNER,),
                  inherit: bool = True) -> dict[str, Any]:
    """The `where` filter of what a reader may recall, optionally narrowed to one wing or a set of wings
    (`include_hidden`: superseded memories too, never held ones).

    The reader is a profile and the scopes it speaks for. The owner (scopes == ("",)) reads the profile's own
    memories plus the shared wings of every profile, as always. Anyone else reads their own scopes' memories of
    this profile, plus (with `inherit`) the owner's instructions confirmed for everyone: the only memory that
    crosses people. (The owner in a group chat reads as the owner plus the chat: the owner's instructions of every
    profile, confirmed or not.)
    profile=None means every profile, scopes=None every scope (the CLI's admin views and kanban recall).
    A writer deciding duplicate / update passes its one scope and inherit=False: decisions never cross people.
    """
    shared = sorted(set(shared_wings))
    clauses: list[dict] = []
    clauses.append({"status": "active"} if not include_hidden else {"status": {"$ne": HELD}})
    if wing is not None:
        wings = [wing]
    wanted = sorted(set(wings)) if wings is not None else None
    if wanted is not None:
        clauses.append(_in("wing", wanted))
    owner_view = scopes is not None and tuple(scopes) == (OWNER,)
    if scopes is None or owner_view:
        if scopes is not None:
            clauses.append({"scope": OWNER})
        if profile is not None:
            clauses.append(_profile_clause(profile, shared, wanted))
    else:
        own = _and([_scopes_clause(scopes), {"profile": profile} if profile is not None else {}])
        if inherit and (wanted is None or INHERITED_WING in wanted):
            confirmed = {} if OWNER in scopes else {"audience": EVERYONE}  # absent (older stores) never matches
            owners = _and([{"scope": OWNER}, {"wing": INHERITED_WING}, confirmed,
                           _profile_clause(profile, shared, [INHERITED_WING]) if profile is not None else {}])
            clauses.append(_or([own, owners]))
        else:
            clauses.append(own)
    if extra:  # Chroma takes one field per clause: {"room": ..., "profile": ...} is two
        clauses.extend({key: value} for key, value in extra.items())
    return _and(clauses)


def _profile_clause(profile: str, shared: list[str], wanted: list[str] | None) -> dict:
    """Own profile, or a wing shared by every profile."""
    readable_shared = [w for w in shared if wanted is None or w in wanted]
    own = {"profile": profile}
    if not readable_shared:
        return own
    if wanted is not None and set(wanted) <= set(readable_shared):
        return {}  # every wanted wing is shared: all profiles' memories there are visible
    return _or([own, _in("wing", readable_shared)])


def is_visible(meta: dict, profile: str | None, shared_wings: Iterable[str],
               scopes: Sequence[str] | None = (OWNER,), inherit: bool = True) -> bool:
    """The same rule as `visible_where`, for one record's metadata."""
    if meta.get("status", "active") != "active":
        return False
    return matches(meta, visible_where(profile, shared_wings, scopes=scopes, inherit=inherit))


def matches(meta: dict, where: dict | None) -> bool:
    """Whether one record's metadata passes a Chroma `where` filter (the operators automem's filters use).

    Lets the store filter the nearest neighbours itself: on an embedded Chroma a filtered vector query is 10x
    slower than an unfiltered one at 10k memories.
    """
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches(meta, c) for c in cond):
                return False
        elif key == "$or":
            if not any(matches(meta, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            value = meta.get(key)
            for op, arg in cond.items():
                ok = {"$eq": lambda: value == arg, "$ne": lambda: value != arg,
                      "$in": lambda: value in arg, "$nin": lambda: value not in arg,
                      "$gt": lambda: value is not None and value > arg,
                      "$gte": lambda: value is not None and value >= arg,
                      "$lt": lambda: value is not None and value < arg,
                      "$lte": lambda: value is not None and value <= arg}.get(op)
                if ok is None:
                    raise ValueError(f"unsupported filter operator {op}")
                if not ok():
                    return False
        elif meta.get(key) != cond:
            return False
    return True
