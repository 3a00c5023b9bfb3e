"""The Memory tab's backend, as Hermes' dashboard loads it: this file alone (spec_from_file_location, so no relative
imports), mounted under /api/plugins/automem/. It only hands over the router of the installed automem package
(automem/dashboard/routes.py). When Hermes' Python cannot import automem, every route answers 503 with what to do,
so the tab shows that instead of a blank page.
"""

try:
    from automem.dashboard.routes import router
except Exception as exc:  # noqa: BLE001 - any import failure: the tab must still say what is wrong
    from fastapi import APIRouter
    from fastapi.responses import JSONResponse

    _REASON = (f"automem cannot be imported by the dashboard's Python ({exc.__class__.__name__}: {exc}); run "
               f"`automem doctor` and the pip command it prints, then restart `hermes dashboard`")
    router = APIRouter()

    @router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "DELETE"])
    def unavailable(path: str) -> JSONResponse:
        return JSONResponse({"detail": _REASON}, status_code=503)
