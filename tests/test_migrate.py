"""`automem migrate --to URL|PATH`: embedded -> server -> embedded is lossless (ids, text, metadata, vectors)."""

from __future__ import annotations

import json

import pytest
import requests

from automem.cli import main
from automem.config import Config
from automem.core.memory import Memory
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.ops.migrate import iter_raw, target_of
from automem.paths import Location

# The tests that use the Chroma server are marked `server` (the slow tier); the rest need none.


def run(capsys, *argv: str) -> tuple[int, list, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")], captured.err


def fill(store: Store) -> None:
    """Memories in every status, several profiles and wings, a supersede chain and foreign metadata keys."""
    remember(store, [Candidate("项目用Python 3.11", wing="instruction", profile="blog-writer", room="auto-extract",
                               session_id="s1", job="j1")], now=1700000000)
    remember(store, [Candidate("项目改用Python 3.12", wing="instruction", profile="blog-writer", room="auto-extract",
                               session_id="s2", job="j2")], now=1700000100)
    [gone] = remember(store, [Candidate("I use vim, not nano", wing="user", profile="default")], now=1700000200)
    store.forget([gone.id], now=1700000300)
    remember(store, [Candidate("用户喜欢暗色主题", wing="user", profile="editor"),
                     Candidate("Task t_42 (write the release notes) done by blog-writer: published", wing="episodic",
                               profile="blog-writer", room="kanban", task_id="t_42")], now=1700000400)
    store.import_memories([Memory(id="m_imported", text="Imported from mem0: likes green tea", wing="user",
                                  profile="default", room="import", created_at=5, updated_at=6,
                                  extra={"source": "mem0", "score": 0.5, "mem0_pinned": True})])


def raw(store: Store) -> dict:
    return {r.id: (r.document, r.metadata, r.embedding) for r in iter_raw(store.collection)}


def assert_same(got: dict, want: dict) -> None:
    """Every id, document and metadata dict equal; vectors equal within float32 rounding."""
    assert sorted(got) == sorted(want)
    for rid, (doc, meta, vec) in want.items():
        assert got[rid][0] == doc and got[rid][1] == meta, rid
        assert len(got[rid][2]) == len(vec) == 512 and max(abs(a - b) for a, b in zip(got[rid][2], vec)) < 1e-6


def server_root(tmp_path, name: str, url: str, database: str):
    r = tmp_path / name
    r.mkdir()
    (r / "config.yaml").write_text(f"automem:\n  chroma_url: {url}\n  chroma_database: {database}\n", encoding="utf-8")
    return r


@pytest.mark.server
def test_round_trip_embedded_server_embedded_is_lossless(capsys, tmp_path, chroma_server):
    src_root = tmp_path / "machine"
    src = Store(Location(src_root, "default"), Config())
    fill(src)
    original = raw(src)
    statuses = sorted(m[1]["status"] for m in original.values())
    assert statuses.count("superseded") == 1 and len(original) == 5  # the forgotten one left a tombstone only
    # the history rides on the records (automem.core.history): how and when the old value was superseded
    [old] = [meta for _, meta, _ in original.values() if meta["status"] == "superseded"]
    assert old["superseded_how"] == "update" and old["superseded_at"] == 1700000100
    [tomb] = src.tombstones()
    hits_before = [(m.id, round(d, 4)) for m, d in src.search("Python version", k=3, profile="blog-writer")]
    src.close()

    database = "team-memory"  # absent: migrate creates it
    code, [report], err = run(capsys, "migrate", "--to", chroma_server.url, "--database", database, "--json",
                              "--hermes-home", str(src_root))
    assert code == 0, err
    assert report["ok"] and report["copied"] == report["verified"] == 5 and report["mismatched"] == []
    assert report["created"] == [f"database {database}"] and report["target_after"] == 5
    assert report["by_status"] == {"active": 4, "superseded": 1} and report["forgotten"] == 1

    on_server = Store(Location(server_root(tmp_path, "other-machine", chroma_server.url, database), "default"))
    assert on_server.backend == "server"
    assert_same(raw(on_server), original)
    assert on_server.tombstones() == [tomb]  # the forget holds there too, without the words
    assert [(m.id, round(d, 4)) for m, d in on_server.search("Python version", k=3, profile="blog-writer")] == \
        hits_before
    on_server.close()

    back = tmp_path / "back-home"
    code, [report], err = run(capsys, "migrate", "--to", str(back), "--json",
                              "--hermes-home", str(tmp_path / "other-machine"))
    assert code == 0 and report["ok"] and report["copied"] == 5 and report["forgotten"] == 1, err
    final = Store(Location(back, "default"), Config())
    assert final.backend == "embedded"
    assert_same(raw(final), original)
    assert final.tombstones() == [tomb]
    assert final.collection.configuration_json["embedding_function"]["name"] == "automem-usem3"
    every = {m.id: m for m in final.list(profile=None, include_hidden=True)}
    # keys automem does not own
    assert every["m_imported"].extra == {"source": "mem0", "score": 0.5, "mem0_pinned": True}
    # A working store: the write path decides against what was copied.
    [again] = remember(final, [Candidate("项目改用Python 3.12", wing="instruction", profile="blog-writer")])
    assert again.action == "duplicate"
    final.close()


@pytest.mark.server
def test_a_target_that_holds_memories_needs_merge(capsys, tmp_path, chroma_server):
    database = chroma_server.new_database()
    src_root = tmp_path / "a"
    s = Store(Location(src_root, "default"), Config())
    remember(s, [Candidate("I use vim, not nano", wing="user")])
    s.close()
    assert run(capsys, "migrate", "--to", chroma_server.url, "--database", database, "--hermes-home",
               str(src_root))[0] == 0
    code, _, err = run(capsys, "migrate", "--to", chroma_server.url, "--database", database, "--hermes-home",
                       str(src_root))
    assert code == 2 and "already holds 1 memories" in err and "--merge" in err and len(err.strip().splitlines()) == 1
    s = Store(Location(src_root, "default"), Config())
    remember(s, [Candidate("用户住在上海", wing="user")])
    s.close()
    code, [report], _ = run(capsys, "migrate", "--to", chroma_server.url, "--database", database, "--merge", "--json",
                            "--hermes-home", str(src_root))
    assert code == 0 and report["target_before"] == 1 and report["target_after"] == 2 and report["ok"]


@pytest.mark.server
def test_migrating_an_empty_store_creates_tenant_and_database(capsys, tmp_path, chroma_server):
    code, [report], err = run(capsys, "migrate", "--to", chroma_server.url, "--tenant", "acme-team", "--database",
                              "shared", "--json", "--hermes-home", str(tmp_path / "empty"))
    assert code == 0, err
    assert report["created"] == ["tenant acme-team", "database shared"] and report["copied"] == 0
    got = requests.get(f"{chroma_server.url}/api/v2/tenants/acme-team/databases/shared/collections/memories",
                       timeout=5)
    assert got.status_code == 200  # the collection exists, with automem's embedding function
    assert got.json()["configuration_json"]["embedding_function"]["name"] == "automem-usem3"
    cfg = Config(chroma_url=chroma_server.url, chroma_tenant="acme-team", chroma_database="shared")
    s = Store(Location(tmp_path / "user", "default"), cfg)
    assert s.count() == 0
    s.close()


def test_to_path_means_a_root_its_chroma_folder_or_a_profile_home(tmp_path):
    here = Location(tmp_path / "src", "default")
    for given in (tmp_path / "h", tmp_path / "h" / "automem" / "chroma", tmp_path / "h" / "profiles" / "editor"):
        loc, cfg = target_of(str(given), here, Config(chroma_url="http://127.0.0.1:1"))
        assert loc.root == tmp_path / "h" and cfg.chroma_url == ""


def test_migrating_onto_itself_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "migrate", "--to", str(tmp_path / "r"), "--hermes-home", str(tmp_path / "r"))
    assert code == 2 and "already uses" in err
    code, _, err = run(capsys, "migrate", "--to", str(tmp_path / "x"), "--database", "d",
                       "--hermes-home", str(tmp_path / "r"))
    assert code == 2 and "only go with --to URL" in err


@pytest.mark.server
def test_back_into_the_same_root_then_drop_chroma_url(capsys, tmp_path, chroma_server):
    database = chroma_server.new_database()
    root = server_root(tmp_path, "home", chroma_server.url, database)
    code, decisions, _ = run(capsys, "add", "I use vim, not nano", "--json", "--hermes-home", str(root))
    assert code == 0 and decisions[0]["decision"] == "new"
    code, [report], err = run(capsys, "migrate", "--to", str(root), "--json", "--hermes-home", str(root))
    assert code == 0 and report["ok"] and report["copied"] == 1, err
    assert report["target"] == str(root / "automem" / "chroma")
    (root / "config.yaml").write_text("automem: {}\n", encoding="utf-8")  # back to the embedded store
    code, hits, _ = run(capsys, "search", "which editor", "--json", "--hermes-home", str(root))
    assert code == 0 and hits[0]["id"] == decisions[0]["id"] and hits[0]["text"] == "I use vim, not nano"
