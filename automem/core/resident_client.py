"""The client of the resident recall process (`automem.core.resident`): find its socket, ask it, start it.

A fresh process (every `hermes chat -q`, every kanban worker) asks the root's long-lived resident over a Unix socket
instead of importing chromadb and loading the model itself (about 2.5 s of CPU); recall (`automem.core.recall`)
falls back to the index's keyword match when none answers in time.

- `socket_path`: `<root>/automem/resident.sock`, or a short path under /tmp/automem-<uid>/ when that one is too
  long for AF_UNIX. A socket whose peer is another user is never trusted (SO_PEERCRED).
- `ask` (never raises; None when nothing usable answered), `ensure_started` (a detached server,
  `python -m automem.core.resident`, spawned at most once per SPAWN_INTERVAL_S per root), `recall_hits` (ask,
  else start one and say None).

Nothing here imports the server: the server imports this module (the socket path, the fingerprint, `ask`).
The log gets ids and error lines only, never a query or a memory's words.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..config import Config
from ..log import log_event
from ..paths import PACKAGE_PARENT, Location
from ..version import __version__
from .embeddings import SINGLE_THREAD_ENV

SOCKET_NAME = "resident.sock"
SPAWN_STAMP = "resident.spawn"  # mtime: the last spawn (in the future: a failed start, wait until then)
SPAWN_INTERVAL_S = 20.0  # a root's clients spawn at most one server this often (the lock stops extras anyway)
ASK_TIMEOUT_S = 0.5  # the resident answers in 15-50 ms; more only when the machine is overloaded
MAX_SUN_PATH = 107  # bytes of a socket path (sun_path is 108 with its NUL on Linux, 104 on macOS)
MAX_REPLY = 8 << 20
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


# -- where -------------------------------------------------------------------------------------------------------
def enabled(config: Config) -> bool:
    """`resident: true` and a positive `resident_idle_s`, on a system with Unix sockets."""
    return bool(config.resident) and config.resident_idle_s > 0 and hasattr(socket, "AF_UNIX")


def socket_path(location: Location) -> Path:
    """`<root>/automem/resident.sock`, or `/tmp/automem-<uid>/<sha256(root)[:16]>.sock` when that is too long."""
    primary = location.automem_dir / SOCKET_NAME
    if len(os.fsencode(str(primary))) <= MAX_SUN_PATH:
        return primary
    digest = hashlib.sha256(os.fsencode(str(location.root))).hexdigest()[:16]
    return _short_dir() / f"{digest}.sock"


def _short_dir() -> Path:
    return Path("/tmp") / f"automem-{os.getuid()}"


def config_fingerprint(config: Config) -> str:
    """What decides recall's answer besides the request: the store, the model, visibility and ranking settings.
    A client whose own config differs from the server's for that profile is refused (it falls back)."""
    fields = ("chroma_url", "chroma_tenant", "chroma_database", "chroma_token", "chroma_auth_header", "embedding",
              "embedding_model", "embedding_base_url", "embedding_api_key", "shared_wings", "recall_pool",
              "recall_rerank_weight", "recall_keyword_weight")
    blob = json.dumps([getattr(config, f, None) for f in fields], default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def _peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux); None where the platform cannot tell."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    _pid, uid, _gid = _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, opt, _CRED.size))
    return uid


# -- the client ----------------------------------------------------------------------------------------------------
def ask(location: Location, request: dict, timeout: float = ASK_TIMEOUT_S) -> dict | None:
    """One request to the root's resident; its reply (a dict, {"ok": false, ...} included), or None when no server
    of this user answered with JSON within `timeout` seconds. Never raises."""
    return _ask(location, request, timeout)[0]


def _ask(location: Location, request: dict, timeout: float) -> tuple[dict | None, bool]:
    """(`ask`'s answer, whether a server of this user accepted the connection: a slow one needs no new one)."""
    sock = None
    reached = False
    try:
        path = socket_path(location)
        deadline = time.monotonic() + timeout
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(str(path))
        uid = _peer_uid(sock)
        if uid is not None and uid != os.getuid():
            return None, False  # a socket another user put there: not ours to trust
        reached = True
        req = dict(request)
        req.setdefault("version", __version__)
        sock.sendall(json.dumps(req, ensure_ascii=False).encode("utf-8") + b"\n")
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or len(buf) > MAX_REPLY:
                return None, reached
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return None, reached
            buf += chunk
        reply = json.loads(buf.split(b"\n", 1)[0].decode("utf-8"))
        return (reply if isinstance(reply, dict) else None), reached
    except Exception:  # noqa: BLE001 - no socket, refused, timeout, garbage: the caller falls back
        return None, reached
    finally:
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


def ensure_started(location: Location, config: Config, *, check: bool = True) -> None:
    """Start the root's resident, detached, unless one answers or a client of this root spawned one lately.
    Never raises (a failure is logged)."""
    if not enabled(config):
        return
    try:
        if check:
            reply = ask(location, {"op": "ping"})
            if reply is not None and reply.get("ok") and reply.get("version") == __version__:
                return
        if not location.automem_dir.is_dir():
            return  # nothing was ever stored here: nothing to serve
        from filelock import FileLock, Timeout

        guard = FileLock(str(location.automem_dir / f"{SPAWN_STAMP}.lock"), mode=0o600)
        try:
            guard.acquire(timeout=0)
        except Timeout:
            return  # another client is spawning one right now
        try:
            stamp = location.automem_dir / SPAWN_STAMP
            try:
                last = stamp.stat().st_mtime
            except OSError:
                last = 0.0
            now = time.time()
            if now < last + SPAWN_INTERVAL_S:  # lately, or within a failed start's back-off (a future mtime)
                return
            fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.close(fd)
            os.utime(stamp, (now, now))
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
            env.update(SINGLE_THREAD_ENV)
            proc = subprocess.Popen([sys.executable, "-m", "automem.core.resident", "--hermes-home",
                                     str(location.root)], start_new_session=True, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                                    cwd="/", env=env)
            log_event(location, "resident_spawned", child_pid=proc.pid)
        finally:
            guard.release()
    except Exception as exc:  # noqa: BLE001 - the lexical fallback goes on
        log_event(location, "resident_spawn_failed", error=f"{exc.__class__.__name__}: {exc}"[:300])


def recall_hits(location: Location, config: Config, query: str, *, scopes: Sequence[str], k: int,
                where: dict | None = None, timeout: float | None = None) -> list[tuple[Any, float, bool]] | None:
    """`Store.recall(query, ...)` of `location.profile` as the resident computes it: [(Memory, distance, backed)],
    best first (backed: the memory shares the question's words or concepts, `automem.core.recall`); None when no
    resident could answer (one is started for the next caller). Never raises."""
    if not enabled(config):
        return None
    reply, reached = _ask(location, {"op": "recall", "query": query, "profile": location.profile,
                                     "scopes": list(scopes), "k": int(k), "where": where,
                                     "config": config_fingerprint(config)},
                          ASK_TIMEOUT_S if timeout is None else timeout)
    if not reached or (reply is not None and reply.get("version", __version__) != __version__):
        # none runs, or an older version (which exits after this answer). One that was only slow stays.
        ensure_started(location, config, check=False)
    if reply is None or not reply.get("ok") or not isinstance(reply.get("hits"), list):
        return None
    from .memory import SAME_WORDS_AS, Memory

    out = []
    try:
        for h in reply["hits"]:
            mem = Memory(id=str(h["id"]), text=str(h["text"]), wing=str(h["wing"]), profile=str(h["profile"]),
                         room=str(h.get("room") or ""), scope=str(h.get("scope") or ""),
                         created_at=int(h.get("created_at") or 0), updated_at=int(h.get("updated_at") or 0),
                         extra={SAME_WORDS_AS: str(h.get("same_words_as") or "")})
            out.append((mem, float(h["distance"]), bool(h.get("backed"))))
    except (KeyError, TypeError, ValueError):
        return None
    return out
