"""The Memory tab's requests, checked: every input the page sends becomes a typed query, or a BadRequest whose one
line says what is wrong. Plain functions: no FastAPI, no store, no files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..core.memory import WING_OF_CATEGORY
from ..paths import profile_name_problem

ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")  # the ids `automem import` accepts (m_<24 hex> and older ones)
# A person's, a chat's or a session's scope (automem.core.memory): the kind, then the gateway's own ids.
SCOPE_PATTERN = re.compile(r"^(user|chat|session):[^\x00-\x1f\x7f]{1,300}$")
OWNER_SCOPE, ALL_SCOPES = "owner", "all"
STATUSES = ("active", "superseded", "forgotten")
DEFAULT_PAGE, MAX_PAGE, MAX_OFFSET = 50, 200, 1_000_000
MAX_QUERY_CHARS = 500  # a question, not a document
DEFAULT_K, MAX_K = 10, 50  # the agent's prefetch asks for max(recall_max_items, 5)
MAX_TEXT_CHARS = 2000  # an edit's text (the write path applies its own, smaller limit)
MAX_BODY_BYTES = 16 * 1024


class BadRequest(ValueError):
    """A request the tab's backend refuses (HTTP 400), with a message for the page."""


@dataclass(frozen=True)
class View:
    """Whose memories a request is about: a profile, and a scope ("" the owner's, a person's or a chat's; None:
    every scope)."""

    profile: str
    scope: str | None = ""

    @property
    def scopes(self) -> tuple[str, ...] | None:
        return None if self.scope is None else (self.scope,)


@dataclass(frozen=True)
class ListQuery:
    view: View
    wing: str | None = None  # None: every category
    status: str = "active"
    pinned: bool | None = None  # None: pinned or not
    offset: int = 0
    limit: int = DEFAULT_PAGE


@dataclass(frozen=True)
class SearchQuery:
    view: View
    query: str
    k: int = DEFAULT_K
    wing: str | None = None


# -- single values -------------------------------------------------------------------------------------------------
def _text(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be text")
    return value.strip()


def profile_of(params: Mapping[str, Any], default: str) -> str:
    value = _text(params, "profile") or default
    problem = profile_name_problem(value)
    if problem:
        raise BadRequest(f"profile: {problem}")
    return value


def scope_of(params: Mapping[str, Any]) -> str | None:
    """"owner" (default) -> "", "all" -> None, else a person's / chat's scope."""
    value = _text(params, "scope") or OWNER_SCOPE
    if value == OWNER_SCOPE:
        return ""
    if value == ALL_SCOPES:
        return None
    if not SCOPE_PATTERN.match(value):
        raise BadRequest("scope must be owner, all, or a person's or chat's scope (user:<platform>:<id>, "
                         "chat:<platform>:<chat id>, session:<platform>:<key>; at most 300 characters)")
    return value


def wing_of(params: Mapping[str, Any]) -> str | None:
    value = _text(params, "category")
    if not value or value == "all":
        return None
    if value not in WING_OF_CATEGORY:
        raise BadRequest(f"category must be one of {', '.join(WING_OF_CATEGORY)} (or all)")
    return WING_OF_CATEGORY[value]


def flag_of(params: Mapping[str, Any], name: str) -> bool | None:
    value = params.get(name)
    if value is None or value == "" or value == "any":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "no"):
        return False
    raise BadRequest(f"{name} must be true, false or any")


def int_of(params: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = params.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be a whole number")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a whole number") from None
    if not low <= number <= high:
        raise BadRequest(f"{name} must be from {low} to {high}")
    return number


def memory_id_of(value: object, what: str = "memory") -> str:
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise BadRequest(f"not a {what} id (letters, digits, _ . : -; at most 128 characters)")
    return value


# -- whole requests ------------------------------------------------------------------------------------------------
def view_of(params: Mapping[str, Any], default_profile: str) -> View:
    return View(profile_of(params, default_profile), scope_of(params))


def list_query(params: Mapping[str, Any], default_profile: str) -> ListQuery:
    status = _text(params, "status") or "active"
    if status not in STATUSES:
        raise BadRequest(f"status must be one of {', '.join(STATUSES)}")
    return ListQuery(view_of(params, default_profile), wing_of(params), status, flag_of(params, "pinned"),
                     int_of(params, "offset", 0, 0, MAX_OFFSET), int_of(params, "limit", DEFAULT_PAGE, 1, MAX_PAGE))


def search_query(params: Mapping[str, Any], default_profile: str) -> SearchQuery:
    query = _text(params, "q") or ""
    if not query:
        raise BadRequest("q: give something to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"q is {len(query)} characters long; at most {MAX_QUERY_CHARS}")
    return SearchQuery(view_of(params, default_profile), query, int_of(params, "k", DEFAULT_K, 1, MAX_K),
                       wing_of(params))


def json_body(raw: bytes, allowed: tuple[str, ...]) -> dict:
    """The JSON object a POST/PUT carries: at most MAX_BODY_BYTES of UTF-8, only the `allowed` fields."""
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body is {len(raw)} bytes; at most {MAX_BODY_BYTES}")
    try:
        obj = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8") from None
    except RecursionError:
        raise BadRequest("the request body is nested too deeply") from None
    except ValueError as exc:
        raise BadRequest(f"the request body is not JSON ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(obj, dict):
        raise BadRequest("the request body must be a JSON object")
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise BadRequest(f"unknown field {', '.join(map(repr, unknown))} (fields: {', '.join(allowed)})")
    return obj


def pin_request(raw: bytes, default_profile: str) -> tuple[View, bool]:
    """{"profile", "scope", "pinned": true|false}: the memory's own profile and scope, as `automem pin` wants."""
    body = json_body(raw, ("profile", "scope", "pinned"))
    if not isinstance(body.get("pinned"), bool):
        raise BadRequest("pinned must be true or false")
    view = view_of(body, default_profile)
    if view.scope is None:
        raise BadRequest("scope: give the memory's own scope (owner, or the person's or chat's)")
    return view, body["pinned"]


def forget_request(raw: bytes, memory_id: str, default_profile: str) -> View:
    """{"profile", "confirm": <the id>}: the id repeated, so no stray request forgets a memory."""
    body = json_body(raw, ("profile", "confirm"))
    if body.get("confirm") != memory_id:
        raise BadRequest("confirm must repeat the memory's id: forgetting cannot be undone")
    return View(profile_of(body, default_profile), None)


def edit_request(raw: bytes, default_profile: str) -> tuple[View, str]:
    body = json_body(raw, ("profile", "text"))
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("text: give the corrected memory")
    if len(text) > MAX_TEXT_CHARS:
        raise BadRequest(f"text is {len(text)} characters long; at most {MAX_TEXT_CHARS}")
    return View(profile_of(body, default_profile), None), text


def profile_request(raw: bytes, default_profile: str) -> str:
    return profile_of(json_body(raw, ("profile",)), default_profile)
