"""A real `hermes dashboard` on 127.0.0.1 for the Memory tab's tests and benchmark: started with --port 0 in its own
process group under a HermesRoot's isolated HOME / HERMES_HOME, stopped by its process group id (never with
`hermes dashboard --stop`, which stops every dashboard on the machine), and a headless Chromium to look at it.

    with Dashboard(root) as dash:
        dash.get("/api/plugins/automem/memories")          # with the session token the page carries
        dash.get("/api/plugins/automem/memories", token="")  # without: the dashboard answers 401
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.hermes import REPO, HermesRoot

REPO_SCREENSHOT = REPO / "docs" / "images" / "memory-tab.png"  # the docs' picture of the tab, made by the e2e test
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can). scripts/bootstrap.sh --test installs what is missing."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is missing: run scripts/bootstrap.sh --test (as root) or apt-get install chromium " \
                   f"chromium-driver"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: run scripts/bootstrap.sh --test"
    return None


class Dashboard:
    """`hermes dashboard --skip-build --port 0 --host 127.0.0.1` for one HermesRoot."""

    def __init__(self, root: HermesRoot, start_timeout: float = 120):
        self.root = root
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.output: list[str] = []
        self._token: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Dashboard":
        self.proc = subprocess.Popen(
            [self.root.hermes, "dashboard", "--skip-build", "--port", "0", "--host", "127.0.0.1", "--no-open"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.root.env(), cwd=str(self.root.home), start_new_session=True)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if not sel.select(timeout=1):
                continue
            line = self.proc.stdout.readline()
            self.output.append(line)
            found = re.search(r"HERMES_DASHBOARD_READY port=(\d+)", line)
            if found:
                self.port = int(found.group(1))
                break
        sel.close()
        if not self.port:
            self.stop()
            raise AssertionError("hermes dashboard did not start:\n" + "".join(self.output[-40:]))
        # keep reading its output (a full pipe would block the server); the last lines help a failing test
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        return self

    def _read(self, stream) -> None:
        for line in stream:
            self.output.append(line)
            del self.output[:-200]

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=15)
        self.proc = None

    def __enter__(self) -> "Dashboard":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- HTTP ------------------------------------------------------------------------------------------------------
    @property
    def token(self) -> str:
        """The session token the page carries (loopback binds put it in the HTML)."""
        if self._token is None:
            html = urllib.request.urlopen(self.url + "/", timeout=30).read().decode("utf-8")
            found = re.search(r'__HERMES_SESSION_TOKEN__\s*=\s*"([^"]+)"', html)
            assert found, "no session token in the dashboard's page"
            self._token = found.group(1)
        return self._token

    def request(self, method: str, path: str, body: dict | None = None, token: str | None = None,
                timeout: float = 120) -> tuple[int, object]:
        """(status, JSON body) of one call; `token` None: the page's token, "": none."""
        token = self.token if token is None else token
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token:
            headers["X-Hermes-Session-Token"] = token
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                return res.status, json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw)
            except ValueError:
                return err.code, raw.decode("utf-8", "replace")

    def get(self, path: str, **kw) -> tuple[int, object]:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: dict, **kw) -> tuple[int, object]:
        return self.request("POST", path, body, **kw)


def chromium_driver(width: int = 1400, height: int = 1000):
    """Debian's headless Chromium through its own chromedriver (selenium never looks for or fetches a browser)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--lang=en-US", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium-manager go looking on the network
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def copy_if_changed(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.exists() or dest.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dest)
