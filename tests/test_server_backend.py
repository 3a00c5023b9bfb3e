"""The store on a real Chroma server (started by the tests on 127.0.0.1): errors, embeddings, races, doctor.

The whole store / write-path suite also runs against the server through the parametrised `store` fixture
(tests/conftest.py); this file covers what only a server has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import requests

from automem.cli import main
from automem.config import Config
from automem.core.memory import memory_id
from automem.core.server import server_checks
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.errors import StoreError
from automem.ops.compact import compact
from automem.paths import Location
from tests.support.chroma_server import AuthProxy, free_port

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each test that starts or uses a Chroma server is marked `server` (the slow tier); the ones that need none (a URL
# nothing listens on, a malformed URL, the embedded side of the parametrised `store`) stay in the default tier.


@pytest.fixture
def db(chroma_server) -> str:
    return chroma_server.new_database()


@pytest.fixture
def server_config(chroma_server, db) -> Config:
    return Config(chroma_url=chroma_server.url, chroma_database=db)


def _one_line_store_error(location, cfg) -> str:
    s = Store(location, cfg)
    with pytest.raises(StoreError) as err:
        s.count()
    s.close()
    msg = str(err.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_an_unreachable_server_is_one_line_that_says_what_to_do(location):
    port = free_port()  # nothing listens there
    msg = _one_line_store_error(location, Config(chroma_url=f"http://127.0.0.1:{port}"))
    assert f"cannot reach the Chroma server at http://127.0.0.1:{port}" in msg
    assert "chroma run" in msg and "automem.chroma_url" in msg


@pytest.mark.server
def test_a_missing_database_or_tenant_is_named_and_never_created(location, chroma_server):
    msg = _one_line_store_error(location, Config(chroma_url=chroma_server.url, chroma_database="no-such-db"))
    assert "database `no-such-db` does not exist" in msg and "automem migrate --to" in msg
    msg = _one_line_store_error(location, Config(chroma_url=chroma_server.url, chroma_tenant="no-such-tenant"))
    assert "tenant `no-such-tenant` does not exist" in msg
    # An ordinary open must not create it (a typo would start a second, empty memory).
    got = requests.get(f"{chroma_server.url}/api/v2/tenants/default_tenant/databases/no-such-db", timeout=5)
    assert got.status_code == 404


def test_a_malformed_url_is_a_config_error(location, capsys, root):
    (root / "config.yaml").write_text("automem:\n  chroma_url: localhost:8000\n", encoding="utf-8")
    code = main(["stats", "--hermes-home", str(root)])
    err = capsys.readouterr().err
    assert code == 2 and "expected http(s)://host:port" in err and len(err.strip().splitlines()) == 1


@pytest.mark.server
@pytest.mark.parametrize("header", ["Authorization", "X-Chroma-Token"])
def test_the_token_is_sent_and_a_refused_one_is_one_line(location, chroma_server, db, header):
    value = "Bearer s3cret" if header == "Authorization" else "s3cret"
    with AuthProxy(chroma_server.port, header, value) as proxy:
        wrong = Config(chroma_url=proxy.url, chroma_database=db, chroma_token="wrong", chroma_auth_header=header)
        msg = _one_line_store_error(location, wrong)
        assert f"refused the token sent as `{header}`" in msg and "automem.chroma_token" in msg
        msg = _one_line_store_error(location, Config(chroma_url=proxy.url, chroma_database=db))
        assert "refused no token" in msg

        right = Config(chroma_url=proxy.url, chroma_database=db, chroma_token="s3cret", chroma_auth_header=header)
        s = Store(location, right)
        [d] = remember(s, [Candidate("I use vim, not nano", wing="user")])
        assert d.action == "new"
        assert [m.text for m, _ in s.search("text editor", k=1, profile="default")] == ["I use vim, not nano"]
        s.close()
        assert proxy.refused >= 2


@pytest.mark.server
def test_the_collection_carries_our_embedding_function_and_adds_carry_vectors(location, server_config,
                                                                              chroma_server, db):
    s = Store(location, server_config)
    [d] = remember(s, [Candidate("用户习惯用vim编辑器", wing="user")])
    # Read back over plain REST: what the server itself holds.
    base = f"{chroma_server.url}/api/v2/tenants/default_tenant/databases/{db}/collections"
    col = requests.get(f"{base}/memories", timeout=5).json()
    assert col["configuration_json"]["embedding_function"]["name"] == "automem-usem3"
    assert col["configuration_json"]["hnsw"]["space"] == "cosine"
    got = requests.post(f"{base}/{col['id']}/get", json={"ids": [d.id], "include": ["embeddings"]}, timeout=5).json()
    stored = got["embeddings"][0]
    mine = s.embed(["用户习惯用vim编辑器"])[0]  # computed here, on the client
    assert len(stored) == 512 and max(abs(a - b) for a, b in zip(stored, mine)) < 1e-5
    s.close()
    # No model on the server side: nothing under its data folder and home looks like model weights.
    paths = [os.path.join(d, f) for d, _, files in os.walk(chroma_server.dir) for f in files]
    assert paths and not [p for p in paths if "onnx" in p or p.endswith((".safetensors", ".tar.gz"))], paths


def test_chroma_add_keeps_an_existing_record_which_the_store_relies_on(store):
    # Store.write_records sends ids that were absent a moment ago through Chroma's `add`: if another machine stored
    # the same id in between, its record must stay whole. This is the Chroma behaviour that makes that true, on both
    # backends.
    vec = store.embed(["a fact stored first"])[0]
    store.collection.add(ids=["m_x"], documents=["a fact stored first"], embeddings=[vec],
                         metadatas=[{"job": "first", "created_at": 1}])
    store.collection.add(ids=["m_x"], documents=["a fact stored first"], embeddings=[vec],
                         metadatas=[{"job": "second", "created_at": 2}])
    [meta] = store.collection.get(ids=["m_x"])["metadatas"]
    assert meta["job"] == "first" and meta["created_at"] == 1


def test_a_stale_copy_does_not_bring_back_a_memory_another_writer_forgot(store, location, config):
    [d] = remember(store, [Candidate("I use vim, not nano", wing="user")])
    stale = store.get([d.id])[0]  # writer A read it (say, to bump updated_at on a duplicate)...
    other = Store(location, config)  # ...writer B (another machine) forgets it meanwhile
    assert other.forget([d.id]) == [d.id]
    other.close()
    stale.updated_at += 10
    store.update_metadata([stale])  # A writes back its stale, active copy
    assert store.get([d.id]) == []  # still gone
    # A memory that was superseded is not revived either, and a forgotten one is not turned into superseded.
    [a] = remember(store, [Candidate("项目用Python 3.11", wing="instruction")])
    old = store.get([a.id])[0]
    [b] = remember(store, [Candidate("项目改用Python 3.12", wing="instruction")])
    assert b.action == "update"
    store.update_metadata([old])
    assert store.get([a.id])[0].status == "superseded"
    stale.status, stale.superseded_by = "superseded", b.id
    store.update_metadata([stale])
    assert store.get([d.id]) == [] and [t["id"] for t in store.tombstones()] == [d.id]


RACER = textwrap.dedent("""
    import glob, json, os, sys, time
    sys.path.insert(0, {repo!r})
    from automem.paths import Location
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    root, go, job, texts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    state = {{"round": 0}}
    real_write = Store.write_records

    def write_records(self, memories, embeddings):
        # Both writers have decided before either writes: the interleaving two machines without a shared lock
        # can always produce, forced here so the test does not depend on the scheduler.
        open(f"{{go}}{{state['round']}}.decided.{{job}}", "w").close()
        deadline = time.time() + 30
        while len(glob.glob(f"{{go}}{{state['round']}}.decided.*")) < 2 and time.time() < deadline:
            time.sleep(0.001)
        return real_write(self, memories, embeddings)

    Store.write_records = write_records
    s = Store(Location.resolve(root))
    s.embed(["warm up"]); s.count()
    print("READY", flush=True)
    for n, text in enumerate(texts):
        state["round"] = n
        while not os.path.exists(f"{{go}}{{n}}"):
            time.sleep(0.0005)
        [d] = remember(s, [Candidate(text, wing="user", session_id=job, job=job)])
        print(json.dumps({{"action": d.action, "id": d.id}}), flush=True)
    s.close()
""")

SAME = ["用户住在上海浦东", "The staging cluster is called kestrel", "每篇文章都要配一张封面图"]
WORDINGS = [("项目统一用Python 3.11", "项目统一使用 Python 3.11"), ("I use vim, not nano", "I use vim and not nano")]


@pytest.mark.server
def test_two_machines_writing_one_fact_at_once_leave_one_memory_after_compact_at_the_latest(tmp_path,
                                                                                            chroma_server, db):
    # Two roots = two machines: separate write locks, one server database.
    roots = []
    for name in ("machine-a", "machine-b"):
        r = tmp_path / name
        r.mkdir()
        (r / "config.yaml").write_text(f"automem:\n  chroma_url: {chroma_server.url}\n  chroma_database: {db}\n",
                                       encoding="utf-8")
        roots.append(r)
    plans = [SAME + [a for a, _ in WORDINGS], SAME + [b for _, b in WORDINGS]]
    go = str(tmp_path / "go")
    procs = [subprocess.Popen([sys.executable, "-c", RACER.format(repo=REPO), str(r), go, f"job-{i}",
                               json.dumps(plans[i])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, r in enumerate(roots)]
    for p in procs:
        assert p.stdout.readline().strip() == "READY", p.stderr.read()
    results = []
    for n in range(len(plans[0])):
        open(f"{go}{n}", "w").close()  # both writers start this fact now
        results.append([json.loads(p.stdout.readline()) for p in procs])
    for p in procs:
        p.communicate(timeout=60)
        assert p.returncode == 0
    # Neither saw the other: both decided "new" every time.
    assert all([a["action"], b["action"]] == ["new", "new"] for a, b in results), results

    s = Store(Location.resolve(str(roots[0])))
    for text, pair in zip(SAME, results):  # the same sentence: one id, so one memory, one writer's record whole
        assert pair[0]["id"] == pair[1]["id"] == memory_id("default", "user", text)
        hits = [m for m in s.list(profile="default", include_hidden=True) if m.text == text]
        assert len(hits) == 1 and hits[0].status == "active"
        assert hits[0].job in ("job-0", "job-1") and hits[0].session_id == hits[0].job
    active = {m.text for m in s.list(profile="default")}
    assert all(a in active and b in active for a, b in WORDINGS)  # two wordings of one fact: both stored...
    report = compact(s)
    assert sorted(frozenset((m.kept_text, m.superseded_text)) for m in report.merges) == \
        sorted(frozenset(w) for w in WORDINGS)
    assert all(m.action == "duplicate" for m in report.merges)
    active = {m.text for m in s.list(profile="default")}
    assert all((a in active) != (b in active) for a, b in WORDINGS)  # ...until compact keeps the first written
    every = {m.id: m for m in s.list(profile="default", include_hidden=True)}
    for m in report.merges:
        assert every[m.superseded].superseded_by == m.kept and every[m.kept].status == "active"
    assert compact(s).merges == []
    s.close()


@pytest.mark.server
def test_doctor_checks_a_healthy_server(location, server_config):
    checks = {c.name: c for c in server_checks(server_config)}
    assert checks["chroma server reachable"].status == "ok"
    assert checks["chroma server version"].status == "ok" and "1." in checks["chroma server version"].detail
    assert checks["chroma tenant and database"].status == "ok"
    assert checks["chroma collection"].status == "ok" and "not created yet" in checks["chroma collection"].detail
    s = Store(location, server_config)
    remember(s, [Candidate("I use vim, not nano", wing="user")])
    s.close()
    checks = {c.name: c for c in server_checks(server_config)}
    assert checks["chroma collection"].status == "ok" and "present, space cosine" in checks["chroma collection"].detail
    assert checks["chroma embedding function"].status == "ok"
    assert "automem-usem3" in checks["chroma embedding function"].detail


@pytest.mark.server
def test_doctor_names_each_server_problem(location, chroma_server, server_config):
    [c] = server_checks(Config(chroma_url=f"http://127.0.0.1:{free_port()}"))
    assert c.name == "chroma server reachable" and c.status == "fail" and "cannot reach" in c.detail and c.fix
    checks = server_checks(Config(chroma_url=chroma_server.url, chroma_database="no-such-db"))
    assert checks[-1].name == "chroma tenant and database" and checks[-1].status == "fail"
    assert "no-such-db" in checks[-1].detail
    # A collection made with another embedding function (here: the OpenAI-compatible one).
    other = Config(chroma_url=server_config.chroma_url, chroma_database=server_config.chroma_database,
                   embedding="openai", embedding_base_url="http://127.0.0.1:9/v1")
    s = Store(location, other)
    _ = s.collection  # creates the collection with automem-openai
    s.close()
    checks = {c.name: c for c in server_checks(server_config)}
    ef = checks["chroma embedding function"]
    assert ef.status == "fail" and "automem-openai" in ef.detail and "automem-usem3" in ef.detail and ef.fix
    assert server_checks(Config()) == []  # embedded: nothing to check here


@pytest.mark.server
def test_doctor_command_runs_the_server_checks(capsys, root, chroma_server, db):
    (root / "config.yaml").write_text(f"automem:\n  chroma_url: {chroma_server.url}\n  chroma_database: {db}\n",
                                      encoding="utf-8")
    main(["doctor", "--hermes-home", str(root), "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    names = {c["name"]: c["status"] for c in lines}
    assert names.get("chroma server reachable") == "ok" and names.get("chroma tenant and database") == "ok"
    assert names.get("store") == "ok"


@pytest.mark.server
@pytest.mark.slow
def test_stress_four_writers_lose_nothing_and_racing_copies_collapse(chroma_server):
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "scripts.stress_server", "--url", chroma_server.url, "--procs", "4",
                          "--per-proc", "200", "--json"], capture_output=True, text=True, timeout=1800, cwd=REPO)
    assert out.stdout.strip(), out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    conc, same = result["concurrent"], result["same_fact"]
    assert conc["errors"] == [] and conc["missing"] == []
    assert conc["reported_stored"] == 800 and conc["on_server"] >= 800
    assert all(n == 1 for n in same["identical_records_per_round"])
    # Whatever raced (it depends on the scheduler; the forced race is the test above), compact left one active
    # wording per fact, merging nothing else (800 memories of single writers included), and a second run nothing.
    assert all(n == 1 for n in same["wordings_active_after_compact"])
    assert same["compact"]["merged"] == sum(n - 1 for n in same["wordings_active_before_compact"])
    assert same["compact_again"]["merged"] == 0
    assert result["ok"], (result, time.time() - t0)


@pytest.mark.server
def test_a_server_that_goes_away_mid_session_is_one_line_not_a_traceback(location, tmp_path):
    from tests.support.chroma_server import ChromaServer

    with ChromaServer(tmp_path / "short-lived") as server:
        s = Store(location, Config(chroma_url=server.url))
        [d] = remember(s, [Candidate("I use vim, not nano", wing="user")])
        server.stop()
        for call in (lambda: s.search("editor", profile="default"), lambda: s.get([d.id]), s.count,
                     lambda: s.list(profile="default"), lambda: remember(s, [Candidate("用户住在上海", wing="user")]),
                     lambda: s.forget([d.id])):
            with pytest.raises(StoreError) as err:
                call()
            assert f"cannot reach the Chroma server at {server.url}" in str(err.value), str(err.value)
            assert "\n" not in str(err.value)
        s.close()
