"""An isolated Hermes Agent 0.19 root for end-to-end tests, and helpers that drive the real `hermes` CLI.

Every `hermes` command writes into $HERMES_HOME (and some into ~), even `hermes --version`, so each run here gets
HOME and HERMES_HOME inside the test's temporary folder. The root's config.yaml points `model:` at a fake
OpenAI-compatible server on 127.0.0.1 (tests/support/fake_llm.py) and switches tirith off (its warning would land
on stdout in -Q mode).

    root = HermesRoot.create(tmp_path, llm_url=fake.url)
    res = root.chat("hello")                       # hermes chat -Q -q hello
    res = root.chat("hi", profile="blog-writer")   # hermes -p blog-writer chat -Q -q hi
    root.automem("doctor")                         # python -m automem --hermes-home <root> doctor
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from . import tiers

REPO = Path(__file__).resolve().parents[2]


def find_hermes() -> str | None:
    """The `hermes` executable: on PATH, else next to this interpreter (the test venv)."""
    found = shutil.which("hermes")
    if found:
        return found
    beside = Path(sys.executable).with_name("hermes")
    return str(beside) if beside.exists() else None


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def session_id(self) -> str | None:
        for line in self.stderr.splitlines():
            if line.startswith("session_id:"):
                return line.split(":", 1)[1].strip()
        return None

    def check(self) -> "Result":
        assert self.returncode == 0, (f"{' '.join(self.argv)} exited {self.returncode}\n"
                                      f"--- stdout\n{self.stdout[-3000:]}"
                                      f"\n--- stderr\n{self.stderr[-3000:]}")
        return self


def base_config(llm_url: str, model: str = "fake-model") -> str:
    return (
        "model:\n"
        "  provider: custom\n"
        f"  default: {model}\n"
        f"  base_url: {llm_url}\n"
        "  api_key: fake-key\n"
        "security:\n"
        "  tirith_enabled: false\n"
    )


@dataclass
class HermesRoot:
    """A Hermes root (HERMES_HOME) and a fake HOME in a temporary folder."""

    root: Path
    home: Path
    llm_url: str
    hermes: str
    extra_env: dict = field(default_factory=dict)

    @classmethod
    def create(cls, base: Path, llm_url: str, *, extra_config: str = "", name: str = "hermes-root") -> "HermesRoot":
        tiers.require("e2e", "the real hermes CLI")
        hermes = find_hermes()
        if hermes is None:
            raise RuntimeError("hermes is not installed in this environment (pip install hermes-agent==0.19.0)")
        root = Path(base) / name
        home = Path(base) / f"{name}-home"
        root.mkdir(parents=True)
        home.mkdir(parents=True)
        (root / "config.yaml").write_text(base_config(llm_url) + extra_config, encoding="utf-8")
        return cls(root=root, home=home, llm_url=llm_url, hermes=hermes)

    # -- paths ---------------------------------------------------------------------------------------------------
    def profile_home(self, profile: str = "default") -> Path:
        return self.root if profile == "default" else self.root / "profiles" / profile

    def config_path(self, profile: str = "default") -> Path:
        return self.profile_home(profile) / "config.yaml"

    # -- environment ---------------------------------------------------------------------------------------------
    def env(self, **overrides: str) -> dict:
        """The environment of every command: isolated HOME/HERMES_HOME, automem importable by Hermes' Python."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AUTOMEM_", "HERMES_", "OPENAI_", "GLM_", "PYTEST_"))}
        env.update(HOME=str(self.home), HERMES_HOME=str(self.root), NO_COLOR="1", TERM="dumb",
                   PYTHONDONTWRITEBYTECODE="1")
        env["AUTOMEM_RESIDENT"] = "false"  # no resident outliving the test (an override turns it on)
        # Hermes' interpreter imports automem from this checkout (the installer would pip-install it instead).
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        bindir = str(Path(self.hermes).parent)
        env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
        env.update(self.extra_env)
        env.update(overrides)
        return env

    def run(self, argv: Sequence[str], *, timeout: float = 120, stdin: str | None = None,
            env: dict | None = None, cwd: str | os.PathLike | None = None) -> Result:
        """Run a command in its own process group; on timeout the whole group is killed."""
        argv = [str(a) for a in argv]
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or self.env(),
                                cwd=str(cwd or self.home), start_new_session=True)
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{' '.join(argv)} timed out after {timeout} s\n--- stdout\n{out[-2000:]}\n"
                                 f"--- stderr\n{err[-2000:]}") from None
        return Result(argv, proc.returncode, out, err, time.monotonic() - start)

    def hermes_cmd(self, *args: str, profile: str | None = None, timeout: float = 120, **kw) -> Result:
        prefix = [self.hermes] + (["-p", profile] if profile and profile != "default" else [])
        return self.run(prefix + list(args), timeout=timeout, **kw)

    def chat(self, message: str, *, profile: str | None = None, timeout: float = 120, **kw) -> Result:
        """`hermes [-p P] chat -Q -q MESSAGE` (quiet: stdout is the answer, the session id goes to stderr)."""
        return self.hermes_cmd("chat", "-Q", "-q", message, profile=profile, timeout=timeout, **kw)

    def automem(self, *args: str, timeout: float = 180, **kw) -> Result:
        """The automem CLI of this checkout, run as a user would (`python -m automem ...`)."""
        return self.run([sys.executable, "-m", "automem", *args], timeout=timeout, **kw)

    def automem_json(self, *args: str, **kw) -> list[dict]:
        res = self.automem(*args, "--json", **kw).check()
        return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]

    # -- config --------------------------------------------------------------------------------------------------
    def write_config(self, text: str, profile: str = "default") -> None:
        path = self.config_path(profile)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def append_config(self, text: str, profile: str = "default") -> None:
        path = self.config_path(profile)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)

    def create_profile(self, name: str, *, clone: bool = True) -> Result:
        args = ["profile", "create", name, "--no-alias"] + (["--clone"] if clone else [])
        return self.hermes_cmd(*args).check()


def poll(predicate: Callable[[], object], *, deadline_s: float = 90, interval_s: float = 0.5,
         what: str = "condition") -> object:
    """Call `predicate` until it returns something truthy; fail with `what` after the deadline."""
    end = time.monotonic() + deadline_s
    last: object = None
    while time.monotonic() < end:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"{what}: not reached within {deadline_s:.0f} s (last value: {last!r})")


def request_texts(requests: list[dict]) -> list[str]:
    """For each chat request of a fake server log: every message's text joined (system prompt included)."""
    from tests.support.fake_llm import content_text

    out = []
    for req in requests:
        if not str(req.get("path", "")).endswith("/chat/completions"):
            continue
        body = req.get("body") or {}
        out.append("\n".join(content_text(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict)))
    return out
