"""The Chroma server backend (`chroma_url`): Chroma's HTTP client, embeddings stay on the client side.

The server only stores vectors and metadata: the collection is created with automem's registered embedding
function (`automem-usem3` by default) and every add carries its embeddings, so a server never loads a model.

Failures to connect are turned into one line that says what to fix. The REST calls below (`/api/v2/...`) are the
same ones Chroma's own client makes; they are used to tell an unreachable server from a refused token from a
missing tenant or database, and by `automem doctor`.

Tenants and databases are never created by an ordinary open: a typo in `chroma_database` must not split a team's
memory into a new empty store. `automem migrate --to URL` creates them (`ensure_database`), which is also how an
empty shared store is set up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlparse

from ..errors import ConfigError, StoreError, StoreUnavailable

API = "/api/v2"
COLLECTION = "memories"  # the same name as automem.core.store.COLLECTION (kept here so doctor needs no chromadb)
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ServerTarget:
    """Where `chroma_url` points, with the headers and the tenant/database every request uses."""

    url: str
    host: str
    port: int
    ssl: bool
    headers: dict = field(default_factory=dict, hash=False)
    tenant: str = "default_tenant"
    database: str = "default_database"

    @property
    def base(self) -> str:
        return f"{'https' if self.ssl else 'http'}://{self.host}:{self.port}{API}"

    @property
    def where(self) -> str:
        return f"tenant `{self.tenant}`, database `{self.database}` at {self.url}"


def auth_headers(token: str, header: str = "Authorization") -> dict[str, str]:
    """The header that carries `chroma_token`: `Authorization: Bearer <token>` or e.g. `X-Chroma-Token: <token>`."""
    if not token:
        return {}
    header = header or "Authorization"
    value = token
    if header.lower() == "authorization" and not value.lower().startswith(("bearer ", "basic ")):
        value = f"Bearer {value}"
    return {header: value}


def target_of(config, url: str | None = None) -> ServerTarget:
    """The server a config (or an explicit URL with the config's token, tenant and database) points at."""
    raw = (url if url is not None else config.chroma_url).strip()
    parsed = urlparse(raw)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"automem.chroma_url={raw!r}: expected http(s)://host:port (e.g. http://10.0.0.5:8000)")
    if parsed.path not in ("", "/") or parsed.query:
        raise ConfigError(f"automem.chroma_url={raw!r}: give only scheme, host and port "
                          f"(Chroma's API lives at /api/v2)")
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    except ValueError:
        raise ConfigError(f"automem.chroma_url={raw!r}: the port is not a number") from None
    return ServerTarget(url=raw.rstrip("/"), host=parsed.hostname, port=port, ssl=parsed.scheme == "https",
                        headers=auth_headers(config.chroma_token, config.chroma_auth_header),
                        tenant=config.chroma_tenant or "default_tenant",
                        database=config.chroma_database or "default_database")


# -- plain REST probes (requests; no chromadb import) ----------------------------------------------------------
@dataclass
class Answer:
    status: int  # HTTP status; 0 when no answer came
    body: Any = None
    error: str = ""  # why no answer came


def _request(t: ServerTarget, method: str, path: str, timeout: float, json_body: Any = None) -> Answer:
    import requests

    try:
        resp = requests.request(method, t.base + path, headers=t.headers, json=json_body,
                                timeout=(min(CONNECT_TIMEOUT_S, timeout), timeout))
    except requests.exceptions.SSLError as exc:
        return Answer(0, error=f"TLS failed ({exc.__class__.__name__})")
    except requests.exceptions.Timeout:
        return Answer(0, error=f"no answer within {timeout:.0f} s")
    except requests.exceptions.ConnectionError:
        return Answer(0, error="connection refused or host unreachable")
    except requests.RequestException as exc:
        return Answer(0, error=exc.__class__.__name__)
    try:
        body = resp.json()
    except ValueError:
        body = resp.text[:200]
    return Answer(resp.status_code, body)


def _message(ans: Answer) -> str:
    if isinstance(ans.body, dict) and ans.body.get("message"):
        return str(ans.body["message"])
    return f"HTTP {ans.status}"


def _t(name: str) -> str:
    return quote(name, safe="")


def heartbeat(config, timeout: float) -> bool:
    """Whether the configured server answers a heartbeat within `timeout` seconds (never raises)."""
    try:
        return _request(target_of(config), "GET", "/heartbeat", timeout).status == 200
    except Exception:  # noqa: BLE001 - a malformed URL answers nothing either
        return False


def refused_line(t: ServerTarget, ans: Answer) -> str:
    sent = next(iter(t.headers), None)
    how = f"the token sent as `{sent}`" if sent else "no token (automem.chroma_token is empty)"
    return (f"the Chroma server at {t.url} refused {how} (HTTP {ans.status}): set automem.chroma_token "
            f"(and automem.chroma_auth_header, e.g. X-Chroma-Token) to a valid token")


def diagnose(t: ServerTarget, timeout: float = 10.0) -> str | None:
    """One line saying why the server cannot serve automem's tenant and database, or None if it can."""
    ans = _request(t, "GET", "/heartbeat", timeout)
    if ans.status == 0:
        return (f"cannot reach the Chroma server at {t.url} ({ans.error}): start it (`chroma run --host 0.0.0.0 "
                f"--port {t.port} --path DIR`) or fix automem.chroma_url")
    if ans.status in (401, 403):
        return refused_line(t, ans)
    if ans.status == 404 or ans.status == 410:
        return (f"{t.url} does not answer Chroma's v2 API (HTTP {ans.status} for {API}/heartbeat): automem needs a "
                f"Chroma 1.x server (chromadb>=1.0) at that address")
    if ans.status != 200:
        return f"the Chroma server at {t.url} answered HTTP {ans.status} to a heartbeat: {_message(ans)}"
    ans = _request(t, "GET", "/auth/identity", timeout)
    if ans.status in (401, 403):
        return refused_line(t, ans)
    ans = _request(t, "GET", f"/tenants/{_t(t.tenant)}", timeout)
    if ans.status in (401, 403):
        return refused_line(t, ans)
    if ans.status == 404:
        return (f"tenant `{t.tenant}` does not exist on {t.url}: fix automem.chroma_tenant, or create it with "
                f"`automem migrate --to {t.url}`")
    if ans.status != 200:
        return f"the Chroma server at {t.url} cannot read tenant `{t.tenant}`: {_message(ans)}"
    ans = _request(t, "GET", f"/tenants/{_t(t.tenant)}/databases/{_t(t.database)}", timeout)
    if ans.status in (401, 403):
        return refused_line(t, ans)
    if ans.status == 404:
        return (f"database `{t.database}` does not exist in tenant `{t.tenant}` on {t.url}: fix "
                f"automem.chroma_database, or create it with `automem migrate --to {t.url}` (copies this "
                f"machine's store there; an empty store creates an empty database)")
    if ans.status != 200:
        return f"the Chroma server at {t.url} cannot read database `{t.database}`: {_message(ans)}"
    return None


def ensure_database(t: ServerTarget, timeout: float = 30.0) -> list[str]:
    """Create the tenant and database if they are absent; returns what was created. Used by `automem migrate`."""
    created = []
    problem = diagnose(t, timeout)
    if problem is None:
        return created
    if problem.startswith(f"tenant `{t.tenant}`"):
        ans = _request(t, "POST", "/tenants", timeout, {"name": t.tenant})
        if ans.status != 200:
            raise StoreError(f"cannot create tenant `{t.tenant}` on {t.url}: {_message(ans)}")
        created.append(f"tenant {t.tenant}")
        problem = diagnose(t, timeout)
    if problem is not None and problem.startswith(f"database `{t.database}`"):
        ans = _request(t, "POST", f"/tenants/{_t(t.tenant)}/databases", timeout, {"name": t.database})
        if ans.status != 200:
            raise StoreError(f"cannot create database `{t.database}` on {t.url}: {_message(ans)}")
        created.append(f"database {t.database}")
        problem = diagnose(t, timeout)
    if problem is not None:
        raise StoreError(problem)
    return created


# -- the client the store uses ---------------------------------------------------------------------------------
def _set_timeout(client: Any, timeout: float) -> None:
    """Chroma's HTTP client waits forever by default; a hung server must not hang a Hermes session."""
    try:
        import httpx

        client._server._session.timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
    except Exception:  # a private attribute: if Chroma renames it, the client keeps its own default
        pass


def make_http_client(config, settings) -> Any:
    """Chroma's HttpClient for `config.chroma_url`, or a StoreError whose one line says what to fix."""
    import chromadb

    t = target_of(config)
    timeout = float(getattr(config, "chroma_timeout", 30.0) or 30.0)
    # One heartbeat with a timeout first: Chroma's client would wait forever on a server that accepts and hangs.
    ans = _request(t, "GET", "/heartbeat", timeout)
    if ans.status != 200:
        problem = diagnose(t, timeout) or f"the Chroma server at {t.url} did not answer a heartbeat"
        raise (StoreUnavailable if unanswered(problem) or ans.status == 0 else StoreError)(problem)
    try:
        client = chromadb.HttpClient(host=t.host, port=t.port, ssl=t.ssl, headers=dict(t.headers) or None,
                                     settings=settings, tenant=t.tenant, database=t.database)
    except Exception as exc:
        raise StoreError(diagnose(t, timeout) or f"cannot use the Chroma server at {t.url}: {exc}") from None
    _set_timeout(client, timeout)
    return client


def unanswered(problem: str | None) -> bool:
    """Whether a `diagnose` line says the server did not answer (as opposed to answering no: a refused token, a
    missing database), i.e. whether the same request may work later."""
    if not problem:
        return False
    return problem.startswith("cannot reach the Chroma server") or (
        " to a heartbeat" in problem and "HTTP 5" in problem)


def failure(what: str, exc: BaseException, config) -> StoreError:
    """A failed request to the server as one line: StoreUnavailable when the server does not answer (worth a
    retry), StoreError otherwise."""
    try:
        t = target_of(config)
        problem = diagnose(t, timeout=CONNECT_TIMEOUT_S)
    except Exception:
        problem = None
    line = f"{what}: {problem or f'{exc.__class__.__name__}: {exc}'}"
    timed_out = "timeout" in exc.__class__.__name__.lower() or "timed out" in str(exc).lower()
    return (StoreUnavailable if unanswered(problem) or timed_out else StoreError)(line)


def explain(exc: BaseException, config) -> str:
    """A one-line reason for a failed request to the server (the store wraps Chroma's errors with it)."""
    try:
        t = target_of(config)
        problem = diagnose(t, timeout=CONNECT_TIMEOUT_S)
    except Exception:
        problem = None
    return problem or f"{exc.__class__.__name__}: {exc}"


# -- doctor ----------------------------------------------------------------------------------------------------
@dataclass
class Check:
    """One line of `automem doctor`: what was checked, whether it passed, and the fix when it did not."""

    name: str
    status: str  # ok | warn | fail (the same words as `automem doctor`)
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def expected_embedding_function(config) -> tuple[str, dict]:
    """The embedding function name and the config keys that must match on an existing collection."""
    if config.embedding == "openai":
        return "automem-openai", {"model": config.embedding_model}
    if config.embedding == "hash":
        return "automem-hash", {"model": "hash"}
    return "automem-usem3", {"model": "usem3"}


def server_checks(config, timeout: float = 10.0) -> list[Check]:
    """Doctor's checks of the Chroma server: reachable, version, tenant and database, collection, embedding.

    Empty when `chroma_url` is not set (the embedded store needs none of these). Never raises.
    """
    if not config.chroma_url:
        return []
    try:
        t = target_of(config)
    except ConfigError as exc:
        return [Check("chroma server url", "fail", str(exc), "set automem.chroma_url to http(s)://host:port")]
    checks: list[Check] = []
    ans = _request(t, "GET", "/heartbeat", timeout)
    if ans.status != 200:
        line = diagnose(t, timeout) or f"HTTP {ans.status}"
        checks.append(Check("chroma server reachable", "fail", line,
                            f"start the server (`chroma run --host 0.0.0.0 --port {t.port} --path DIR`) or fix "
                            f"automem.chroma_url / chroma_token"))
        return checks
    checks.append(Check("chroma server reachable", "ok", f"{t.url} answers heartbeats"))

    ver = _request(t, "GET", "/version", timeout)
    version = ver.body if ver.status == 200 and isinstance(ver.body, str) else ""
    major = version.split(".", 1)[0]
    checks.append(Check("chroma server version", "ok" if major.isdigit() and int(major) >= 1 else "fail",
                        f"server API version {version or 'unknown'}",
                        "" if major.isdigit() and int(major) >= 1 else "run a Chroma 1.x server (chromadb>=1.0)"))

    problem = diagnose(t, timeout)
    if problem is not None:
        checks.append(Check("chroma tenant and database", "fail", problem,
                            f"fix automem.chroma_tenant / chroma_database or run `automem migrate --to {t.url}`"))
        return checks
    checks.append(Check("chroma tenant and database", "ok", f"{t.tenant}/{t.database} exist"))

    col = _request(t, "GET", f"/tenants/{_t(t.tenant)}/databases/{_t(t.database)}/collections/{COLLECTION}",
                   timeout)
    if col.status == 404:
        checks.append(Check("chroma collection", "ok", f"`{COLLECTION}` not created yet; the first write creates it"))
        return checks
    if col.status != 200 or not isinstance(col.body, dict):
        checks.append(Check("chroma collection", "fail", f"cannot read `{COLLECTION}`: {_message(col)}",
                            "check the server's log"))
        return checks
    conf = col.body.get("configuration_json") or {}
    space = (conf.get("hnsw") or {}).get("space") or (conf.get("spann") or {}).get("space")
    cosine = space == "cosine"
    checks.append(Check("chroma collection", "ok" if cosine else "fail", f"`{COLLECTION}` present, space {space}",
                        "" if cosine else "the collection was not made by automem: migrate to a new database"))
    ef = conf.get("embedding_function") or {}
    want_name, want_conf = expected_embedding_function(config)
    got_conf = ef.get("config") or {}
    same = ef.get("name") == want_name and all(got_conf.get(k) == v for k, v in want_conf.items())
    checks.append(Check("chroma embedding function", "ok" if same else "fail",
                        f"collection uses {ef.get('name') or 'none'} {got_conf or ''}".strip()
                        + ("" if same else f"; this config embeds with {want_name} {want_conf}"),
                        "" if same else "set automem.embedding back to what the store was built with, or export and "
                                        "import into a new database"))
    return checks
