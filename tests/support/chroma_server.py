"""A real Chroma server on 127.0.0.1 for tests and scripts, plus a token-checking proxy in front of it.

    server = ChromaServer(tmp_dir).start()     # `chroma run --path ... --host 127.0.0.1 --port <free>`
    db = server.new_database()                 # a fresh, empty database: one per test keeps tests apart
    ...
    server.stop()

The open-source Chroma 1.x server does not check tokens, so `AuthProxy` stands in for a server behind an
authenticating gateway (or Chroma Cloud): it forwards requests that carry the right header and answers 401
otherwise, the way those do.

Also runnable: `python tests/support/chroma_server.py [--path DIR] [--port N]` starts a server and prints its URL.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: SIGTERM when the process that started the server dies (a killed pytest leaves no server)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: stop() still ends it on a normal exit
        pass


def chroma_command() -> list[str]:
    """The `chroma` script of the running interpreter's environment (the chromadb package ships it)."""
    script = Path(sys.executable).with_name("chroma")
    if script.exists():
        return [str(script)]
    found = shutil.which("chroma")
    if found:
        return [found]
    # Same entry point the script calls.
    return [sys.executable, "-c", "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; app()"]


def create_database(url: str, name: str | None = None, tenant: str = "default_tenant") -> str:
    """Create an empty database on the server at `url` and return its name (random when not given)."""
    name = name or f"test-{uuid.uuid4().hex[:16]}"
    req = urllib.request.Request(f"{url}/api/v2/tenants/{tenant}/databases",
                                 data=json.dumps({"name": name}).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        if resp.status != 200:
            raise RuntimeError(f"creating database {name} on {url}: HTTP {resp.status}")
    return name


class ChromaServer:
    def __init__(self, path: str | os.PathLike | None = None, port: int | None = None):
        self._own_dir = path is None
        self.dir = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="automem-chroma-"))
        self.port = port
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "server.log"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 60.0) -> "ChromaServer":
        if __package__:  # imported as tests.support.chroma_server, not run as a script
            from . import tiers

            tiers.require("server", "a Chroma server")
        self.dir.mkdir(parents=True, exist_ok=True)
        fixed = self.port
        for _ in range(3):  # a free port can be taken between the probe and the bind
            port = fixed or free_port()
            env = dict(os.environ, HOME=str(self.dir))  # whatever the server writes to ~ stays in tmp
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                chroma_command() + ["run", "--path", str(self.dir / "data"), "--host", HOST, "--port", str(port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                preexec_fn=_die_with_parent)
            log.close()
            self.port = port
            if self._wait_ready(timeout):
                return self
            self.stop()
        raise RuntimeError(f"the Chroma server did not start; see {self.log_path}:\n{self.log_tail()}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def new_database(self, name: str | None = None, tenant: str = "default_tenant") -> str:
        """Create an empty database and return its name."""
        return create_database(self.url, name, tenant)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "ChromaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
               "transfer-encoding", "upgrade", "host", "content-length"}


class AuthProxy:
    """Forwards to `upstream_port` only requests whose `header` equals `value`; 401 for the rest."""

    def __init__(self, upstream_port: int, header: str, value: str):
        self.upstream_port, self.header, self.value = upstream_port, header, value
        self.refused = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get(proxy.header) != proxy.value:
                    proxy.refused += 1
                    data = json.dumps({"error": "Unauthorized", "message": "missing or wrong token"}).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection(HOST, proxy.upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self.httpd = ThreadingHTTPServer((HOST, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> "AuthProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="start a Chroma server on 127.0.0.1 until interrupted")
    ap.add_argument("--path", default=None)
    ap.add_argument("--port", type=int, default=None)
    args = ap.parse_args(argv)
    server = ChromaServer(args.path, args.port).start()
    print(server.url, flush=True)
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
