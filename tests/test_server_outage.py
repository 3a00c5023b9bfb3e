"""Outages of the Chroma server lose nothing (issue 32), with a real `chroma run` stopped and started again.

Extraction jobs retry through the outage without spending their attempts, wait in dead/ once it has lasted
`spool_outage_hours`, and are retried by the next drainer as soon as the server answers; `automem add` queues what it
could not store (and says so), unless `--no-queue`. The outage lasts ten minutes on a clock that runs 100 times
faster than the wall clock (the `time` of the spool and of its drainer), so the back-off, the outage limit and the
drainer's waits are the real ones.
"""

from __future__ import annotations

import json
import time as real_time

import pytest

from automem.cli import main
from automem.config import Config, load_config
from automem.core.store import Store
from automem.extract import drainer, pipeline, spool
from automem.paths import Location
from tests.support.chroma_server import ChromaServer, create_database

pytestmark = pytest.mark.server

SPEED = 100.0  # fake seconds per real second


class FastClock:
    """The `time` module as the spool and its drainer see it, 100 times faster (sleeps 100 times shorter)."""

    def __init__(self):
        self.t0, self.m0 = real_time.time(), real_time.monotonic()

    def time(self) -> float:
        return self.t0 + (real_time.time() - self.t0) * SPEED

    def monotonic(self) -> float:
        return self.m0 + (real_time.monotonic() - self.m0) * SPEED

    def sleep(self, seconds: float) -> None:
        real_time.sleep(max(0.0, seconds) / SPEED)


@pytest.fixture
def machine_on_a_server(tmp_path):
    """make(extra_config) -> (server, location, config): a machine whose store is a fresh database on a real
    `chroma run` (rules extraction, 5 s timeout, plus the `extra_config` lines). `server.stop()` is the outage and
    `server.start()` brings it back on its port and data; the server is stopped at the end either way."""
    servers: list[ChromaServer] = []

    def make(extra_config: str) -> tuple[ChromaServer, Location, Config]:
        server = ChromaServer(tmp_path / "server").start()
        servers.append(server)
        db = create_database(server.url)
        root = tmp_path / "machine"
        root.mkdir()
        (root / "config.yaml").write_text(
            f"automem:\n  chroma_url: {server.url}\n  chroma_database: {db}\n  extract_backend: rules\n"
            f"  chroma_timeout: 5\n{extra_config}", encoding="utf-8")
        loc = Location(root, "default")
        return server, loc, load_config(loc)

    yield make
    for server in servers:
        server.cleanup()


TRANSCRIPTS = [
    [{"role": "user", "content": "以后写文章都用Markdown格式，标题用二级标题"},
     {"role": "assistant", "content": "好的，以后都用Markdown，标题用二级标题。"}],
    [{"role": "user", "content": "I live in Lisbon and I work as a pottery teacher."},
     {"role": "assistant", "content": "Noted: Lisbon, pottery teacher."}],
]


def test_jobs_and_adds_survive_a_ten_minute_outage_and_are_stored_after_it(machine_on_a_server, monkeypatch,
                                                                            capsys):
    server, loc, cfg = machine_on_a_server("  spool_outage_hours: 0.05\n")
    root = loc.root
    with Store(loc, cfg) as s:
        s.count()  # the collection exists
    server.stop()

    jobs = [pipeline.enqueue_windows(loc, t, session_id=f"s{i}", source="cli", config=cfg)[0]
            for i, t in enumerate(TRANSCRIPTS)]
    # `automem add` during the outage: queued, and it says so; with --no-queue: one line, exit 1.
    assert main(["add", "The staging cluster is called kestrel", "--hermes-home", str(root), "--no-judge"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("queued") and "does not answer" in out and "cannot reach" in err
    assert main(["add", "用户住在上海浦东", "--hermes-home", str(root), "--no-queue"]) == 1
    err = capsys.readouterr().err.strip()
    assert "cannot reach the Chroma server" in err and len(err.splitlines()) == 1
    waiting = [j.id for j in spool.pending_jobs(loc)]
    assert len(waiting) == 3

    with Store(loc, cfg) as s:
        s.embed(["warm up"])  # the model loads before the fast clock starts (its load is not the outage's)
    clock = FastClock()
    monkeypatch.setattr(spool, "time", clock)
    monkeypatch.setattr(drainer, "time", clock)
    started = clock.time()
    report = pipeline.drain(loc, cfg, wait_seconds=600.0)  # the outage, drained all along
    while clock.time() - started < 600:  # ten minutes in all
        clock.sleep(10)
    assert report.done == 0 and report.retry >= 3 and report.dead == 3
    dead = {j.id: j for j in spool.dead_jobs(loc)}
    assert set(dead) == set(waiting)
    assert all(j.waiting_for_server and j.attempts == 0 and "has not answered" in j.last_error
               for j in dead.values())  # the outage spent none of their attempts
    from automem.hermes.status import status_config

    assert "3 waiting for the Chroma server" in status_config(str(root))["spool"]
    assert pipeline.drain(loc, cfg).processed == 0  # the server still does not answer: they keep waiting

    server.start()  # back, on its port and data
    report = pipeline.drain(loc, cfg)  # any drainer: a session's end, the gateway's thread, `automem drain`
    assert report.revived == 3 and report.done == 3 and report.dead == 0
    assert not spool.dead_jobs(loc) and not spool.pending_jobs(loc)
    with Store(loc, cfg) as s:
        texts = " | ".join(m.text for m in s.list(profile="default"))
    assert "kestrel" in texts and "Markdown" in texts and "Lisbon" in texts
    log = [json.loads(line) for line in loc.log_file.read_text(encoding="utf-8").splitlines()]
    assert any(r["event"] == "server_back" for r in log)
    done = [r for r in log if r["event"] == "job" and r["status"] == "done"]
    assert {r["job"] for r in done} == set(waiting) and all(r["after_outage_s"] >= 600 for r in done)
    assert set(jobs) <= set(waiting)


def test_a_job_backing_off_from_an_outage_is_due_as_soon_as_the_server_answers(machine_on_a_server):
    server, loc, cfg = machine_on_a_server("  spool_backoff_seconds: 300\n")
    server.stop()
    [jid] = pipeline.enqueue_windows(loc, TRANSCRIPTS[1], session_id="s", source="cli", config=cfg)
    assert pipeline.drain(loc, cfg).retry == 1
    [job] = spool.pending_jobs(loc)
    assert job.outage_since and job.next_attempt_at > real_time.time() + 200 and job.attempts == 0
    server.start()  # back, on its port and data
    report = pipeline.drain(loc, cfg)
    assert report.done == 1, report
    with Store(loc, cfg) as s:
        assert any("Lisbon" in m.text for m in s.list(profile="default"))
