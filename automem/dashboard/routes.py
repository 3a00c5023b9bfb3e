"""The Memory tab's HTTP routes: a FastAPI router that Hermes' dashboard mounts under /api/plugins/automem/.

Only the edge lives here: read the request, check it (`queries`), call the adapter under the store's lock, and
turn every failure into JSON with one clear line ({"detail": ...}, the shape FastAPI and the page's error banner
use). The dashboard's own middleware asks every /api/ request for its session token (a plain GET from another site
gets 401); every change is a POST or PUT with a JSON body.

    GET  /overview                  profiles, scopes, counts, what the tab can offer
    GET  /memories                  one page: profile, scope, category, status, pinned, offset, limit
    GET  /search?q=                 the agent's hybrid recall for a question
    GET  /memories/{id}             one memory, its provenance and its chain
    POST /memories/{id}/pin         {"profile", "scope", "pinned"}
    POST /memories/{id}/forget      {"profile", "confirm": id}
    PUT  /memories/{id}             {"profile", "text"}: `automem edit` (409 with the reason when refused)
    GET  /health                    jobs waiting and failed, the last extraction, the store's size
    POST /jobs/retry                {"profile", "job"?}
"""

from __future__ import annotations

from typing import Any, Callable

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from ..errors import AutomemError, ConfigError, UsageError
from ..log import log_event
from . import adapter
from .queries import (
    BadRequest,
    View,
    edit_request,
    forget_request,
    json_body,
    list_query,
    memory_id_of,
    pin_request,
    profile_of,
    search_query,
    view_of,
)

router = APIRouter()

LIST_PARAMS = ("profile", "scope", "category", "status", "pinned", "offset", "limit")
SEARCH_PARAMS = ("profile", "scope", "category", "q", "k")
VIEW_PARAMS = ("profile", "scope")


def _params(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    params = dict(request.query_params)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise BadRequest(f"unknown parameter {', '.join(map(repr, unknown))} (parameters: {', '.join(allowed)})")
    return params


def _answer(work: Callable[[], Any]) -> Any:
    """Run `work`; every failure becomes an HTTPException with one line."""
    try:
        return work()
    except HTTPException:
        raise
    except BadRequest as exc:
        raise HTTPException(400, str(exc)) from None
    except adapter.NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except NotImplementedError as exc:
        raise HTTPException(501, str(exc)) from None
    except ConfigError as exc:
        raise HTTPException(503, f"automem's settings cannot be used: {exc}") from None
    except UsageError as exc:
        raise HTTPException(409, str(exc)) from None
    except AutomemError as exc:
        raise HTTPException(503, f"the memory store cannot answer: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a bug: one line for the page, the details in automem's log
        log_event(adapter.launch_location(), "dashboard_error", error=f"{exc.__class__.__name__}: {exc}")
        raise HTTPException(500, f"automem failed: {exc.__class__.__name__}: {exc}") from None


def _with_store(profile: str, fn: Callable[[Any], Any]) -> Any:
    loc = adapter.location_of(profile)
    with adapter.STORES.use(loc) as store:
        return fn(store)


def _default_profile() -> str:
    return adapter.launch_location().profile


# -- reads --------------------------------------------------------------------------------------------------------
@router.get("/overview")
def get_overview(request: Request) -> Any:
    def work():
        view = view_of(_params(request, VIEW_PARAMS), _default_profile())
        return _with_store(view.profile, lambda store: adapter.overview(store, view))

    return _answer(work)


@router.get("/memories")
def get_memories(request: Request) -> Any:
    def work():
        q = list_query(_params(request, LIST_PARAMS), _default_profile())
        page = _with_store(q.view.profile, lambda store: adapter.list_memories(store, q))
        return {**page, "offset": q.offset, "limit": q.limit}

    return _answer(work)


@router.get("/search")
def get_search(request: Request) -> Any:
    def work():
        q = search_query(_params(request, SEARCH_PARAMS), _default_profile())
        return _with_store(q.view.profile, lambda store: adapter.search_memories(store, q))

    return _answer(work)


@router.get("/memories/{memory_id}")
def get_memory(memory_id: str, request: Request) -> Any:
    def work():
        mid = memory_id_of(memory_id)
        profile = profile_of(_params(request, ("profile",)), _default_profile())
        return _with_store(profile, lambda store: adapter.memory_detail(store, mid))

    return _answer(work)


@router.get("/health")
def get_health(request: Request) -> Any:
    def work():
        profile = profile_of(_params(request, ("profile",)), _default_profile())
        return _with_store(profile, adapter.health)

    return _answer(work)


# -- changes ------------------------------------------------------------------------------------------------------
async def _body(request: Request) -> bytes:
    """The request's body, read no further than the limit `queries.json_body` enforces (plus one byte to tell)."""
    from .queries import MAX_BODY_BYTES

    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HTTPException(413, f"the request body is {declared} bytes; at most {MAX_BODY_BYTES}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HTTPException(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json_request(request: Request) -> None:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPException(415, "send the request as JSON (Content-Type: application/json)")


async def _change(request: Request, work: Callable[[bytes], Any]) -> Any:
    """A change: a JSON body (checked, bounded), then `work(body)` in the thread pool, its failures one line each."""
    _json_request(request)
    raw = await _body(request)
    return await run_in_threadpool(_answer, lambda: work(raw))


@router.post("/memories/{memory_id}/pin")
async def post_pin(memory_id: str, request: Request) -> Any:
    def work(raw: bytes) -> Any:
        mid = memory_id_of(memory_id)
        view, value = pin_request(raw, _default_profile())
        return _with_store(view.profile, lambda store: adapter.set_pinned(store, mid, view, value))

    return await _change(request, work)


@router.post("/memories/{memory_id}/forget")
async def post_forget(memory_id: str, request: Request) -> Any:
    def work(raw: bytes) -> Any:
        mid = memory_id_of(memory_id)
        view = forget_request(raw, mid, _default_profile())
        return _with_store(view.profile, lambda store: adapter.forget(store, mid))

    return await _change(request, work)


@router.put("/memories/{memory_id}")
async def put_memory(memory_id: str, request: Request) -> Any:
    def work(raw: bytes) -> Any:
        mid = memory_id_of(memory_id)
        view, text = edit_request(raw, _default_profile())
        return _with_store(view.profile, lambda store: adapter.edit(store, mid, view, text))

    return await _change(request, work)


@router.post("/jobs/retry")
async def post_retry(request: Request) -> Any:
    def work(raw: bytes) -> Any:
        body = json_body(raw, ("profile", "job"))
        view: View = view_of({"profile": body.get("profile")}, _default_profile())
        job = None if body.get("job") is None else memory_id_of(body.get("job"), "job")
        loc = adapter.location_of(view.profile)
        return adapter.retry_failed(loc.root, job)

    return await _change(request, work)
