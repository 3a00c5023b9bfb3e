"""A large import embeds its next chunk in a worker process while it writes the current one; the vectors are the
model's, in order, and a worker that dies costs speed, never a chunk."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from automem.config import Config
from automem.core import embed_worker
from automem.core.embed_worker import embed_chunks, uses_worker
from automem.core.embeddings import embed
from automem.core.memory import Memory, memory_id

CHUNKS = [[f"Fact {c}.{i}: the user keeps the {w} notes in folder {c * 10 + i}" for i in range(5)]
          for c, w in enumerate(["garden", "billing", "部署", "piano", "咖啡", "travel"])]

needs_two_cores = pytest.mark.skipif(embed_worker._cores() < 2, reason="the worker is used on two or more cores")


def workers() -> list[int]:
    """Pids of this process's children running the embedding worker."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"automem.core.embed_worker" in cmd:
            pids.append(int(entry.name))
    return pids


def close(got, want) -> bool:
    # The worker runs one BLAS thread, this process may run two: the sums differ in the last bits only.
    return np.allclose(np.asarray(got), np.asarray(want), atol=1e-5)


def test_small_jobs_and_remote_models_are_embedded_here():
    assert not uses_worker(100)
    assert not uses_worker(10**6, Config(embedding="openai"))
    gen = embed_chunks(CHUNKS[:2])
    first = next(gen)
    assert workers() == []
    assert close(first, embed(CHUNKS[0]))
    assert close(next(gen), embed(CHUNKS[1]))


@needs_two_cores
def test_a_large_job_is_embedded_by_the_worker_in_order():
    gen = embed_chunks(CHUNKS, worker_min=1)
    got = [next(gen)]
    assert len(workers()) == 1  # the worker answered the first chunk and is on to the next
    got += list(gen)
    assert workers() == []  # stopped once the job is done
    assert len(got) == len(CHUNKS)
    for vectors, chunk in zip(got, CHUNKS):
        assert len(vectors) == len(chunk)
        assert close(vectors, embed(chunk))


@needs_two_cores
def test_a_worker_killed_mid_job_costs_no_chunk():
    gen = embed_chunks(CHUNKS, worker_min=1)
    got = [next(gen)]
    [pid] = workers()
    os.kill(pid, signal.SIGKILL)
    got += list(gen)  # what it had not answered is embedded in this process
    assert len(got) == len(CHUNKS)
    for vectors, chunk in zip(got, CHUNKS):
        assert close(vectors, embed(chunk))


@needs_two_cores
def test_a_worker_that_cannot_start_costs_no_chunk(monkeypatch):
    monkeypatch.setattr(embed_worker.sys, "executable", "/nonexistent/python")
    got = list(embed_chunks(CHUNKS, worker_min=1))
    assert len(got) == len(CHUNKS)
    assert close(got[3], embed(CHUNKS[3]))


@needs_two_cores
def test_import_through_the_worker_stores_every_memory_with_its_vector(store, monkeypatch):
    monkeypatch.setattr(embed_worker, "WORKER_MIN", 10)
    texts = [t for chunk in CHUNKS for t in chunk]
    mems = [Memory(id=memory_id("default", "user", t), text=t, wing="user", profile="default", room="import",
                   created_at=i, updated_at=i) for i, t in enumerate(texts)]
    assert store.import_memories(mems, batch=7) == len(mems)
    assert store.count() == len(mems)
    stored = store.collection.get(ids=[m.id for m in mems], include=["embeddings"])
    by_id = dict(zip(stored["ids"], stored["embeddings"]))
    assert close([by_id[m.id] for m in mems], embed(texts))
    [(top, dist)] = store.search(embedding=embed([texts[17]])[0], k=1, profile="default")
    assert top.text == texts[17] and dist < 1e-4
