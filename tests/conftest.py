"""Shared fixtures: every test gets its own Hermes root in a temporary folder; nothing touches ~/.hermes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from automem.config import Config  # noqa: E402
from automem.paths import Location  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """HOME and HERMES_HOME point into tmp for every test, and no AUTOMEM_* setting leaks in."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    for name in list(os.environ):
        if name.startswith("AUTOMEM_") or name == "GLM_API_KEY":
            monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "hermes-root"
    r.mkdir()
    return r


@pytest.fixture
def location(root) -> Location:
    return Location(root=root, profile="default")


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def store(location, config):
    from automem.store import Store

    s = Store(location, config)
    yield s
    s.close()


@pytest.fixture
def fake_llm():
    """A scripted OpenAI-compatible server on 127.0.0.1 (tests/support/fake_llm.py); `.url` is its base URL."""
    from tests.support.fake_llm import FakeLLM

    with FakeLLM([]) as llm:
        yield llm
