"""The resident recall process: one warm store per Hermes root, answering recall requests over a Unix socket.

Every `hermes chat -q` and every kanban worker is a fresh process, and importing chromadb and loading the embedding
model cost about 2.5 s of CPU: far more than Hermes' start path may spend. So a fresh process asks a long-lived
process that has both loaded already (the client side: `automem.core.resident_client`), and falls back to the
index's keyword match when none answers in time (then starts one for the next process).

- `python -m automem.core.resident --hermes-home ROOT` (`serve`): opens the store once, warms the model, answers
  JSON lines on `<root>/automem/resident.sock` (`socket_path`: a short path under /tmp/automem-<uid>/ when that
  one is too long for AF_UNIX). Socket 0600 in a 0700 folder, and every peer's uid checked (SO_PEERCRED): only
  the owner of the root is served. One server per root (`<root>/automem/resident.lock`, held for its life); a
  socket file left by a killed server is removed by the next.
- Requests: {"op": "ping"} -> {"ok": true, "pid", "version"}; {"op": "recall", "query", "profile", "scopes", "k",
  "where"} -> {"ok": true, "hits": [...]}, computed by `Store.recall` (which reopens when another process wrote:
  the generation file). Anything wrong -> {"ok": false, "error": one line}; a request never ends the server.
- On a Chroma server it also keeps the root's recall index following the server (`automem.core.sync`) every
  `server_sync_s`, in a thread of its own, so an idle machine's index follows the other machines' changes.
- It exits after `resident_idle_s` without requests, when a client of another automem version asks (after
  answering: the next client starts the new version), when its socket file or folder is removed, or on SIGTERM.

The log gets ids and error lines only, never a query or a memory's words.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import Config, load_config
from ..log import log_event
from ..paths import PACKAGE_PARENT, Location, profile_name_problem
from ..version import __version__
from .embeddings import SINGLE_THREAD_ENV
from .resident_client import SPAWN_INTERVAL_S, SPAWN_STAMP, _peer_uid, ask, config_fingerprint, enabled, socket_path

LOCK_NAME = "resident.lock"
FAILED_BACKOFF_S = 600.0  # after a server failed to start, no new one for this long
MAX_LINE = 1 << 20  # a request line; longer is refused
MAX_K = 100
TICK_S = 0.5  # the server's loop: idle check, socket check, store refresh
CONN_TIMEOUT_S = 10.0  # a connection that sends nothing for this long is closed


# -- where -------------------------------------------------------------------------------------------------------
def _prepare_short_dir(path: Path) -> None:
    """The fallback folder: ours, a real folder (no symlink), 0700; else refuse (another user may have made it)."""
    ensure = path.parent
    try:
        ensure.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(ensure)
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(f"{ensure} is not a folder of this user; remove it")
    if st.st_mode & 0o777 != 0o700:
        os.chmod(ensure, 0o700)


def lock_path(location: Location) -> Path:
    return location.automem_dir / LOCK_NAME


def _store_key(config: Config) -> tuple:
    return (config.chroma_url, config.chroma_tenant, config.chroma_database, config.chroma_token,
            config.chroma_auth_header, config.embedding, config.embedding_model, config.embedding_base_url,
            config.embedding_api_key)


# -- the server ------------------------------------------------------------------------------------------------------
class BadRequest(ValueError):
    pass


class Resident:
    """The server's state: its stores (one per store setting; normally one), the profiles' configs, the clock."""

    def __init__(self, location: Location, config: Config, idle_s: float):
        self.location = location
        self.config = config
        self.idle_s = idle_s
        self._stores: dict[tuple, Any] = {}
        self._configs: dict[str, tuple[tuple, Config]] = {}
        self._lock = threading.Lock()  # requests run one at a time on the stores
        self.last_request = time.monotonic()
        self.stop = threading.Event()
        self.stop_reason = ""
        self._mismatch_logged: set[str] = set()

    # -- stores and configs
    def store_for(self, config: Config):
        key = _store_key(config)
        store = self._stores.get(key)
        if store is None:
            from .store import open_store

            store = self._stores[key] = open_store(self.location, config)
        return store

    def warm(self) -> None:
        store = self.store_for(self.config)
        store.count()  # opens Chroma
        store.embed(["warm-up"])  # loads the model
        store.recall("warm-up", k=1, profile="default")  # and what ranking loads on first use (the lexicon, ...)

    def config_of(self, profile: str) -> Config:
        """The profile's config as a fresh process would load it (re-read when one of its files changes)."""
        loc = Location(self.location.root, profile)
        files = [loc.root / "config.yaml", loc.profile_home / "config.yaml", loc.profile_home / ".env"]
        stamp = tuple(_mtime(p) for p in files)
        cached = self._configs.get(profile)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        cfg = load_config(loc)
        self._configs[profile] = (stamp, cfg)
        return cfg

    def sync_loop(self) -> None:
        """On a Chroma server: keep this machine's recall index following the server (`automem.core.sync`) every
        `server_sync_s` while the resident runs, so an idle machine's index drops forgotten words and shows other
        machines' changes too. In its own thread: a slow or hung server never holds up a recall request."""
        failing = False
        while not self.stop.wait(self.config.server_sync_s):
            if not self.location.automem_dir.is_dir():
                return
            try:
                from . import sync

                sync.sync(self.location, self.config, reconcile=True)
            except Exception:  # noqa: BLE001 - noted in the index and logged by sync; tried again next time
                failing = True
                continue
            if failing:
                failing = False
                self.drain_after_outage()

    def drain_after_outage(self) -> None:
        """The server answers again: work that waited for it (extraction jobs, queued `automem add`s) is drained
        now, by a detached `automem drain` (which revives what waited in dead/), not at the next session's end."""
        waiting = [p for d in (self.location.spool_dir, self.location.dead_dir) if d.is_dir()
                   for p in d.glob("*.json")]
        if not waiting:
            return
        import subprocess

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "automem", "drain", "--quiet", "--single", "--wait", "90",
                                     "--hermes-home", str(self.location.root)], start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    close_fds=True, cwd="/", env=env)
            log_event(self.location, "drainer_spawned", child=proc.pid, reason="the Chroma server answers again")
        except OSError as exc:
            log_event(self.location, "drainer_spawn_failed", error=_line(exc))

    def refresh(self) -> None:
        if not self.location.automem_dir.is_dir():
            return  # the root is going away: reopening would create the store again inside it
        with self._lock:
            for store in self._stores.values():
                try:
                    store.refresh()  # another process wrote: reopen now, not in the next request's time
                except Exception as exc:  # noqa: BLE001 - the next request tries again
                    log_event(self.location, "resident_refresh_failed", error=_line(exc))

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                try:
                    store.close()
                except Exception:  # noqa: BLE001 - exiting anyway
                    pass
            self._stores.clear()

    # -- requests
    def handle(self, raw: bytes) -> dict:
        self.last_request = time.monotonic()
        try:
            req = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return {"ok": False, "error": "not a JSON line"}
        if not isinstance(req, dict):
            return {"ok": False, "error": "a request is a JSON object"}
        version = req.get("version")
        if version is not None and version != __version__:
            self.stop_reason = "version"
            self.stop.set()  # answered below; the client's next caller starts its own version
        try:
            op = req.get("op")
            if op == "ping":
                out = {"ok": True, "pid": os.getpid(), "version": __version__}
            elif op == "recall":
                out = self.recall(req)
            else:
                raise BadRequest(f"unknown op {op!r}" if isinstance(op, str) else "`op` must be a string")
        except BadRequest as exc:
            out = {"ok": False, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a failed request never ends the server
            log_event(self.location, "resident_request_failed", op=str(req.get("op"))[:20], error=_line(exc))
            out = {"ok": False, "error": _line(exc)}
        out.setdefault("version", __version__)
        return out

    def recall(self, req: dict) -> dict:
        query, profile, scopes, k, where = (req.get(f) for f in ("query", "profile", "scopes", "k", "where"))
        if not isinstance(query, str):
            raise BadRequest("`query` must be a string")
        if profile is None:
            profile = "default"
        problem = profile_name_problem(profile)
        if problem:
            raise BadRequest(f"`profile`: {problem}")
        if scopes is None:
            scopes = [""]
        if not isinstance(scopes, list) or not scopes or not all(isinstance(s, str) for s in scopes):
            raise BadRequest("`scopes` must be a non-empty list of strings")
        if k is None:
            k = 5
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise BadRequest(f"`k` must be a whole number from 1 to {MAX_K}")
        if where is not None and not isinstance(where, dict):
            raise BadRequest("`where` must be an object or null")
        if not query.strip():
            return {"ok": True, "hits": []}
        cfg = self.config_of(profile)
        wanted = req.get("config")
        if wanted is not None and wanted != config_fingerprint(cfg):
            if wanted not in self._mismatch_logged:
                self._mismatch_logged.add(wanted)
                log_event(self.location, "resident_config_differs", asked_profile=profile)
            raise BadRequest("the client's config differs from the resident's for this profile")
        with self._lock:
            store = self.store_for(cfg)
            store.config = cfg  # same store and model (the key); the profile's shared wings and ranking settings
            hits = store.recall(query, k=k, profile=profile, where=where or None, scopes=tuple(scopes))
        from .memory import SAME_WORDS_AS
        from .recall import backed_by_question

        return {"ok": True, "hits": [
            {"id": m.id, "text": m.text, "wing": m.wing, "profile": m.profile, "scope": m.scope, "room": m.room,
             "created_at": int(m.created_at or 0), "updated_at": int(m.updated_at or 0), "distance": float(d),
             "same_words_as": str((m.extra or {}).get(SAME_WORDS_AS) or ""),
             "backed": backed_by_question(query, m.text)}  # so the client never loads the lexicon for it
            for m, d in hits]}

    def serve_connection(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(CONN_TIMEOUT_S)
            uid = _peer_uid(conn)
            if uid is not None and uid != os.getuid():
                log_event(self.location, "resident_refused", peer_uid=uid)
                return
            reader = conn.makefile("rb")
            while True:
                raw = reader.readline(MAX_LINE + 1)
                if not raw:
                    return
                if len(raw) > MAX_LINE:
                    conn.sendall(b'{"ok": false, "error": "request too long"}\n')
                    return
                if not raw.strip():
                    continue
                out = self.handle(raw)
                conn.sendall(json.dumps(out, ensure_ascii=False).encode("utf-8") + b"\n")
                if self.stop.is_set():
                    return
        except (OSError, ValueError):
            pass  # the client went away or stalled
        finally:
            try:
                conn.close()
            except OSError:
                pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _line(exc: BaseException) -> str:
    text = f"{exc.__class__.__name__}: {exc}"
    return (text.splitlines() or [""])[0][:300]


def _ino(path: Path) -> int | None:
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


def _clear_socket_path(path: Path) -> None:
    """Make room for the socket (we hold the lock: whoever made what is there is gone). A socket, file or symbolic
    link is removed; an empty folder too (nothing that lives there is a folder); a folder with contents is
    refused in one line (`automem doctor` names it)."""
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        try:
            path.rmdir()
        except OSError:
            raise OSError(f"{path} is a folder, not a socket; move its contents elsewhere and remove it") from None
        return
    path.unlink()


def _hold_off_spawns(location: Location) -> None:
    """After a failed start: clients spawn no new server for FAILED_BACKOFF_S (the stamp's mtime in the future)."""
    try:
        stamp = location.automem_dir / SPAWN_STAMP
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        later = time.time() + FAILED_BACKOFF_S - SPAWN_INTERVAL_S
        os.utime(stamp, (later, later))
    except OSError:
        pass


def serve(location: Location, config: Config | None = None, idle_s: float | None = None) -> int:
    """Run the root's resident until it has a reason to stop. Returns the exit code (0: normal, also when another
    server runs already or its root is removed; 1: it could not start)."""
    location = Location(location.root, "default")
    try:
        root = ServedRoot(location.automem_dir)
    except OSError:
        return 0  # no root to serve
    try:
        return _serve(location, config, idle_s, root.gone)
    finally:
        root.close()


class ServedRoot:
    """The folder a resident serves, held open. A root removed while the resident warms up (a test's or a benchmark's
    temporary root) would be brought back by opening the store, and a new folder under the same name is not ours to
    keep alive. Held open, its inode cannot be handed to that new folder: compared by number alone, the new folder
    could pass for ours, and the resident would fail into it (CI at 08ac922 saw the race test's resident exit 1)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self.ino = os.fstat(self._fd).st_ino

    def gone(self) -> bool:
        return os.fstat(self._fd).st_nlink == 0 or _ino(self.path) != self.ino

    def close(self) -> None:
        os.close(self._fd)


def _serve(location: Location, config: Config | None, idle_s: float | None, root_gone: Callable[[], bool]) -> int:
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_path(location)), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        # Another server holds the root. Ours is asked with our version: an older one answers and exits.
        reply = ask(location, {"op": "ping"}, timeout=2.0)
        if reply is None or reply.get("version") == __version__:
            return 0
        try:
            lock.acquire(timeout=10)
        except Timeout:
            return 0
    resident = None
    listener = None
    path = None
    bound_ino = None
    try:
        try:
            config = config if config is not None else load_config(location)
            if not enabled(config):
                return 0
            idle_s = float(idle_s if idle_s is not None else config.resident_idle_s)
            started = time.process_time()
            resident = Resident(location, config, idle_s)
            resident.warm()
            if root_gone():
                return 0  # removed while the store opened (which made its folders again): nobody to answer
            path = socket_path(location)
            if path.parent != location.automem_dir:
                _prepare_short_dir(path)
            _clear_socket_path(path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                listener.bind(str(path))
            finally:
                os.umask(old)
            os.chmod(path, 0o600)
            bound_ino = _ino(path)
            listener.listen(64)
            listener.settimeout(TICK_S)
        except Exception as exc:  # noqa: BLE001
            if root_gone():
                return 0  # removed while warming up (the error is its files going): nobody to answer, nothing failed
            log_event(location, "resident_failed", error=_line(exc))
            _hold_off_spawns(location)
            return 1
        log_event(location, "resident_started", idle_s=idle_s, startup_cpu_s=round(time.process_time() - started, 3),
                  socket=str(path))

        def on_term(signum, frame):  # noqa: ARG001
            resident.stop_reason = resident.stop_reason or "signal"
            resident.stop.set()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
        if config.chroma_url:
            threading.Thread(target=resident.sync_loop, name="automem-resident-sync", daemon=True).start()
        refreshed = time.monotonic()
        while not resident.stop.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                conn = None
            except OSError as exc:
                log_event(location, "resident_failed", error=_line(exc))
                resident.stop_reason = "accept"
                break
            if conn is not None:
                threading.Thread(target=resident.serve_connection, args=(conn,), name="automem-resident-conn",
                                 daemon=True).start()
                continue
            now = time.monotonic()
            if now - resident.last_request >= resident.idle_s:
                resident.stop_reason = "idle"
                break
            if _ino(path) != bound_ino or root_gone():
                resident.stop_reason = "socket removed"
                break
            if now - refreshed >= TICK_S:
                resident.refresh()
                refreshed = now
        if resident.stop_reason == "version":
            time.sleep(0.05)  # the answer's last bytes leave before the socket goes
        if not root_gone():  # not into a root that was removed (the log would bring its folder back)
            log_event(location, "resident_stopped", reason=resident.stop_reason or "stop")
        return 0
    finally:
        if listener is not None:
            listener.close()
        if path is not None and bound_ino is not None and _ino(path) == bound_ino:
            try:
                path.unlink()
            except OSError:
                pass
        if resident is not None:
            try:
                resident.close()
            except Exception:  # noqa: BLE001
                if not root_gone():
                    raise  # closing a store whose files were removed may fail: nothing is left to lose there
        lock.release()


# One BLAS thread: the resident embeds one short query at a time, where a second OpenBLAS thread only adds waiting.
# On the shared 2-core test machine (load 5) the default pool put 10 % of the embeddings at 300 ms and more; with one
# thread the slowest of 40 took 12 ms.


def main(argv: Sequence[str] | None = None) -> int:
    if "numpy" not in sys.modules:
        os.environ.update(SINGLE_THREAD_ENV)
    parser = argparse.ArgumentParser(prog="python -m automem.core.resident",
                                     description="automem's resident recall process for one Hermes root")
    parser.add_argument("--hermes-home", required=True, help="the Hermes root (the folder that holds profiles/)")
    parser.add_argument("--idle", type=float, default=None, help="seconds without requests before it exits")
    args = parser.parse_args(argv)
    location = Location(Path(os.path.expanduser(args.hermes_home)).absolute(), "default")
    try:
        return serve(location, idle_s=args.idle)
    except Exception as exc:  # noqa: BLE001 - a detached process: the log is where it speaks
        log_event(location, "resident_failed", error=_line(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
