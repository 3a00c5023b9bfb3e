"""Who may see what: a profile reads its own memories plus other profiles' memories in the shared wings.

Plain functions that build Chroma `where` filters; forgotten and superseded memories are never visible.
"""

from __future__ import annotations

from typing import Any, Iterable


def _and(clauses: list[dict]) -> dict:
    clauses = [c for c in clauses if c]
    if not clauses:
        return {}
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _or(clauses: list[dict]) -> dict:
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def visible_where(profile: str | None, shared_wings: Iterable[str], wing: str | None = None,
                  wings: Iterable[str] | None = None, extra: dict | None = None,
                  include_hidden: bool = False) -> dict[str, Any]:
    """The `where` filter of what `profile` may recall, optionally narrowed to one wing or a set of wings.

    profile=None means every profile (the CLI's `--all-profiles` views and kanban recall across profiles).
    """
    shared = sorted(set(shared_wings))
    clauses: list[dict] = []
    if not include_hidden:
        clauses.append({"status": "active"})
    if wing is not None:
        wings = [wing]
    wanted = sorted(set(wings)) if wings is not None else None
    if wanted is not None:
        clauses.append({"wing": wanted[0]} if len(wanted) == 1 else {"wing": {"$in": wanted}})
    if profile is not None:
        readable_shared = [w for w in shared if wanted is None or w in wanted]
        own = {"profile": profile}
        if not readable_shared:
            clauses.append(own)
        elif wanted is not None and set(wanted) <= set(readable_shared):
            pass  # every wanted wing is shared: all profiles' memories there are visible
        else:
            shared_clause = ({"wing": readable_shared[0]} if len(readable_shared) == 1
                             else {"wing": {"$in": readable_shared}})
            clauses.append(_or([own, shared_clause]))
    if extra:
        clauses.append(extra)
    return _and(clauses)


def is_visible(meta: dict, profile: str | None, shared_wings: Iterable[str]) -> bool:
    """The same rule as `visible_where`, for one record's metadata."""
    if meta.get("status", "active") != "active":
        return False
    return profile is None or meta.get("profile") == profile or meta.get("wing") in set(shared_wings)


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
