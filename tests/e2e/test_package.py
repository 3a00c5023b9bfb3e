"""automem as a user installs it (issue 13): the wheel and the sdist are built here, each is installed with
hermes-agent 0.19.0 into a fresh virtualenv, and everything runs through that virtualenv's own `automem` and
`hermes`, from a folder outside the checkout and with no PYTHONPATH: no checkout on any path.

Offline: pip installs from the wheelhouse `scripts/bootstrap.sh --test` keeps in .venv/wheelhouse (the exact
versions of .venv, plus the build backend). Cost: three virtualenvs (about a minute each on the shared 2-core
machine) and two seed runs through `hermes chat -Q -q`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from automem.extract.spool import is_done
from automem.hermes.plugin_files import tree_digest
from automem.log import read_events
from automem.paths import Location
from automem.text import RECALL_MARKER
from tests.support.fake_llm import FakeLLM, content_text
from tests.support.hermes import HermesRoot, find_hermes, poll
from tests.support.seed import PEP8, PY311, QUESTION, SEED_TURN, VIM, hermes_rules

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed")]

REPO = Path(__file__).resolve().parents[2]
WHEELHOUSE = REPO / ".venv" / "wheelhouse"
BUNDLED = {"hooks/automem": "automem/_bundled/hooks/automem", "skills/automem": "automem/_bundled/skills/automem",
           "profiles": "automem/_bundled/profiles"}


def offline_pip() -> dict:
    """pip (and the builds it runs) take everything from the wheelhouse, never from an index."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run(argv, *, env: dict | None = None, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    res = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                         env={**base, **offline_pip(), **(env or {})}, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, f"{' '.join(map(str, argv))} exited {res.returncode}\n{res.stdout[-3000:]}\n" \
                                f"{res.stderr[-3000:]}"
    return res


def repo_files(folder: str) -> dict[str, bytes]:
    base = REPO / folder
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    assert (WHEELHOUSE / ".stamp").is_file(), f"{WHEELHOUSE} is missing: run scripts/bootstrap.sh --test"
    out = tmp_path_factory.mktemp("dist")
    # `python -m build` makes the sdist from the checkout, then the wheel from the unpacked sdist: a wheel that
    # is complete proves the sdist is.
    run([sys.executable, "-m", "build", "--outdir", out, REPO], cwd=out)
    [wheel] = out.glob("automem-*.whl")
    [sdist] = out.glob("automem-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def make_venv(path: Path, *requirements, no_deps: bool = False) -> Path:
    run([sys.executable, "-m", "venv", path])
    run([path / "bin" / "python", "-m", "pip", "install", "--quiet", *(["--no-deps"] if no_deps else []),
         *requirements])
    return path


@pytest.fixture(scope="module")
def venvs(dists, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("venvs")
    return {kind: make_venv(base / kind, dists[kind], "hermes-agent==0.19.0") for kind in ("wheel", "sdist")}


def test_wheel_and_sdist_carry_the_plugin_the_skill_and_the_profiles(dists):
    with zipfile.ZipFile(dists["wheel"]) as whl:
        names = set(whl.namelist())
        for src, dest in BUNDLED.items():
            for rel, data in repo_files(src).items():
                assert whl.read(f"{dest}/{rel}") == data, f"{dest}/{rel} differs from {src}/{rel}"
        assert not any("__pycache__" in n for n in names)
        for data in ("lexicon.yaml", "bip39_english.txt"):  # package data the code reads (the seed phrase list)
            assert whl.read(f"automem/data/{data}") == (REPO / "automem" / "data" / data).read_bytes()
        assert "automem/py.typed" in names  # type checkers read the package's hints (PEP 561)
        [license_file] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert whl.read(license_file) == (REPO / "LICENSE").read_bytes()
        meta = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    with tarfile.open(dists["sdist"]) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        for src in BUNDLED:
            for rel, data in repo_files(src).items():
                assert sdist.extractfile(f"{top}/{src}/{rel}").read() == data
        assert f"{top}/setup.py" in sdist.getnames() and f"{top}/MANIFEST.in" in sdist.getnames()
    # one copy in the repository: the bundle is made at build time, never committed
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "automem/_bundled"], capture_output=True,
                             text=True)
    assert tracked.returncode != 0 or tracked.stdout.strip() == ""
    assert not (REPO / "automem" / "_bundled").exists()


@dataclasses.dataclass
class PackagedHermes(HermesRoot):
    """A Hermes root driven by a virtualenv's own `hermes` and `automem`, with no checkout on the path."""

    venv: Path = Path()

    def env(self, **overrides: str) -> dict:
        env = super().env(**overrides)
        env.pop("PYTHONPATH", None)  # HermesRoot points Hermes at the checkout; here it must find the package
        env.update(offline_pip())
        return env

    def automem(self, *args: str, timeout: float = 300, **kw):
        return self.run([self.venv / "bin" / "automem", *args, "--hermes-home", str(self.root)], timeout=timeout,
                        **kw)

    def memories(self, profile: str) -> dict[str, dict]:
        out = self.automem("list", "--profile", profile, "--json").check().stdout
        return {m["text"]: m for m in map(json.loads, out.splitlines()) if m["profile"] == profile}


def packaged_root(venv: Path, base: Path, llm: FakeLLM) -> PackagedHermes:
    extraction = (f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                  f"  extract_api_key: fake-extract-key\n")
    h = HermesRoot.create(base, llm.url, extra_config=extraction)
    return PackagedHermes(root=h.root, home=h.home, llm_url=h.llm_url, hermes=str(venv / "bin" / "hermes"),
                          venv=venv)


def wait_for_job(h: PackagedHermes, session_id: str) -> None:
    loc = Location(h.root, "default")
    job = poll(lambda: next((e["job"] for e in read_events(loc, "job_enqueued") if e.get("session_id") == session_id),
                            None), deadline_s=15, what=f"the job of session {session_id}")
    poll(lambda: is_done(loc, job), deadline_s=120, what=f"job {job} extracted by the detached drainer")


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installed_package_sets_up_hermes_and_passes_the_seed_checks(kind, venvs, tmp_path):
    venv = venvs[kind]
    site = run([venv / "bin" / "python", "-c", "import automem, automem.hermes.plugin_files as I; "
                "print(automem.__file__); print(I.find_sources().project)"], cwd=tmp_path).stdout.split()
    assert site[0].startswith(str(venv)) and site[1].endswith("site-packages/automem/_bundled"), site
    with FakeLLM(hermes_rules()) as llm:
        h = packaged_root(venv, tmp_path, llm)
        res = h.automem("install").check()
        assert f"{venv}/bin/python imports automem" in res.stdout  # Hermes' Python is this venv's: nothing to pip
        res = h.automem("install", "--profile", "blog-writer").check()
        assert "created with `hermes profile create --clone --no-alias`" in res.stdout
        for profile in ("default", "blog-writer"):
            home = h.profile_home(profile)
            assert tree_digest(home / "plugins" / "automem") == tree_digest(REPO / "hooks" / "automem")
            assert tree_digest(home / "skills" / "automem") == tree_digest(REPO / "skills" / "automem")
            data = yaml.safe_load(h.config_path(profile).read_text(encoding="utf-8"))
            assert "automem" in data["plugins"]["enabled"] and data["memory"]["provider"] == "automem"
        assert "Blog Writer Agent" in (h.profile_home("blog-writer") / "SOUL.md").read_text(encoding="utf-8")

        res = h.automem("doctor", "--profile", "default", "--profile", "blog-writer", "--check-llm", "--json")
        checks = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
        assert res.returncode == 0 and all(c["status"] == "ok" for c in checks), \
            [c for c in checks if c["status"] != "ok"]
        assert {"hermes interpreter", "default: plugin", "blog-writer: hermes memory status", "store",
                "embedding", "llm endpoint"} <= {c["name"] for c in checks}

        # check 1: one chat, the detached drainer (this venv's Python) extracts the three memories
        res = h.chat(SEED_TURN).check()
        wait_for_job(h, res.session_id)
        mems = h.memories("default")
        assert set(mems) == {VIM, PY311, PEP8}, list(mems)
        assert mems[VIM]["category"] == "persona" and mems[PY311]["category"] == "instruction"
        # check 3: a new session asks which editor; the vim memory is in the model's prompt and in the answer
        llm.clear()
        res = h.chat(QUESTION).check()
        [first, *_] = [r for r in llm.chat_requests() if (r["body"] or {}).get("tools")]
        system = content_text(first["body"]["messages"][0]["content"])
        assert RECALL_MARKER in system and f"- [persona, owner] {VIM}" in system
        assert "vim" in res.stdout

        res = h.automem("uninstall", "--profile", "default", "--profile", "blog-writer").check()
        for profile in ("default", "blog-writer"):
            home = h.profile_home(profile)
            assert not (home / "plugins" / "automem").exists() and not (home / "skills" / "automem").exists()
            data = yaml.safe_load(h.config_path(profile).read_text(encoding="utf-8"))
            assert "automem" not in (data.get("plugins") or {}).get("enabled", [])
            assert "provider" not in (data.get("memory") or {})
        assert "the memory store is kept" in res.stdout and set(h.memories("default")) == {VIM, PY311, PEP8}


def test_install_gives_hermes_python_the_same_automem_from_the_wheel_it_came_from(venvs, dists, tmp_path):
    """Hermes in a virtualenv of its own (how Hermes installs itself), automem pip-installed elsewhere:
    `automem install` pip-installs into Hermes' Python the very wheel the user's automem came from (its
    direct_url.json), not a path of the user's environment. Hermes' own dependencies do not matter to this step,
    so its virtualenv holds hermes-agent without them: only its `hermes` script and Python are used."""
    hermes_venv = make_venv(tmp_path / "hermes-venv", "hermes-agent==0.19.0", no_deps=True)
    root = tmp_path / "root"
    root.mkdir()
    (root / "config.yaml").write_text("model:\n  provider: custom\n", encoding="utf-8")
    env = {"HOME": str(tmp_path), "HERMES_HOME": str(root),
           "PATH": os.pathsep.join([str(hermes_venv / "bin"), os.environ.get("PATH", "")])}
    res = run([venvs["wheel"] / "bin" / "automem", "install"], env=env, cwd=tmp_path)
    python = hermes_venv / "bin" / "python"
    assert f"installed automem into {python}" in res.stdout and str(dists["wheel"]) in res.stdout, res.stdout
    probe = json.loads(run([python, "-c", "import automem, json, importlib.metadata as m; print(json.dumps("
                            "{'file': automem.__file__, 'direct': m.distribution('automem').read_text("
                            "'direct_url.json')}))"], cwd=tmp_path).stdout)
    assert probe["file"].startswith(str(hermes_venv))
    direct = json.loads(probe["direct"])
    assert direct["url"] == dists["wheel"].as_uri()
    assert direct["archive_info"]["hashes"]["sha256"] == hashlib.sha256(dists["wheel"].read_bytes()).hexdigest()
    # a second install finds it there and runs no pip
    res = run([venvs["wheel"] / "bin" / "automem", "install"], env=env, cwd=tmp_path)
    assert f"{python} imports automem" in res.stdout
