"""Every input has a bound: numbers, sizes and unknown metadata on import; the query before embedding; YAML aliases
and depth in config; `export` never follows a symbolic link. Each refusal is one line naming where, and costs
little (scripts/bench_bounds.py measures how little)."""

from __future__ import annotations

import json
import os

import pytest

from automem.cli import main
from automem.config import load_config
from automem.errors import ConfigError
from automem.paths import Location

GOOD = {"id": "m_" + "a" * 24, "text": "The user likes green tea", "wing": "user", "status": "active",
        "profile": "default", "created_at": 1700000000, "updated_at": 1700000000}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# (field named in the error, the line's changes) - each one line of an export someone edited
MALICIOUS = [
    ("created_at", {"created_at": 1e19}),
    ("created_at", {"created_at": -5}),
    ("updated_at", {"updated_at": float("nan")}),
    ("updated_at", {"updated_at": float("inf")}),
    ("created_at", {"created_at": 10 ** 30}),
    ("created_at", {"created_at": True}),
    ("created_at", {"created_at": "yesterday"}),
    ("pinned", {"pinned": 7}),
    ("restated", {"restated": 10 ** 12}),
    ("session_id", {"session_id": "s" * 5_000}),
    ("scope", {"scope": 5}),
    ("related_to", {"related_to": "m_" + "b" * 24 * 1000}),
    ("metadata", {f"k{i}": i for i in range(200)}),
    ("bad key", {"bad key": "x"}),
    ("x", {"x": 1e300}),
    ("bytes", {"text": "tea " * 300_000}),
]


@pytest.mark.parametrize("field,change", MALICIOUS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(MALICIOUS)])
def test_import_refuses_numbers_sizes_and_metadata_out_of_bounds_naming_line_and_field(capsys, root, tmp_path,
                                                                                       field, change):
    f = tmp_path / "bad.jsonl"
    lines = [json.dumps(GOOD), json.dumps({**GOOD, "id": "m_" + "c" * 24, **change})]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "import", str(f), "--hermes-home", str(root))
    assert code == 2 and err.count("\n") == 1 and "please report" not in err, err
    assert "bad.jsonl:2" in err and field in err, err
    assert len(err) < 400  # the offending value is not echoed back in full
    assert not (root / "automem" / "chroma").exists()  # refused before the store was opened


def test_import_of_a_forgotten_memorys_tombstone_with_a_bad_time_is_refused_too(capsys, root, tmp_path):
    f = tmp_path / "tomb.jsonl"
    f.write_text(json.dumps({"id": "m_" + "d" * 24, "text": None, "status": "forgotten", "tombstone": True,
                             "wing": "user", "profile": "default", "text_sha": "0" * 32,
                             "forgotten_at": "later"}) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "import", str(f), "--hermes-home", str(root))
    assert code == 2 and "tomb.jsonl:1" in err and "forgotten_at" in err


def test_a_good_export_still_imports_with_its_own_metadata(capsys, root, tmp_path):
    f = tmp_path / "ok.jsonl"
    row = {**GOOD, "related_to": "m_" + "b" * 24, "judged_new": "m_1,m_2", "pinned": 1, "restated": 3,
           "created_at": 1700000000.0}
    f.write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "import", str(f), "--hermes-home", str(root), "--json")
    assert code == 0 and json.loads(out)["imported"] == 1, err
    code, out, _ = run(capsys, "list", "--json", "--hermes-home", str(root))
    [m] = [json.loads(x) for x in out.splitlines()]
    assert m["related_to"] == row["related_to"] and m["restated"] == 3 and m["created_at"] == 1700000000


def _store_raw(store, mid: str, text: str, **meta) -> None:
    """A record written behind the write path's back (an older automem, a hand-edited store)."""
    base = {"wing": "user", "category": "persona", "room": "cli", "profile": "default", "scope": "",
            "added_by": "cli", "session_id": "", "task_id": "", "created_at": 1700000000,
            "updated_at": 1700000000, "status": "active", "superseded_by": "", "job": "", "pinned": 0, "restated": 0}
    base.update(meta)
    from automem.core import index

    store.collection.add(ids=[mid], documents=[text], metadatas=[base], embeddings=store.embed([text]))
    store._wrote()
    index.mark_stale(store.location)  # the index never saw it: its next reader rebuilds it


def test_recall_survives_a_record_with_impossible_numbers_already_in_the_store(location, store):
    """Before: one `created_at: 1e19` stopped every search, system block and prefetch with an OverflowError."""
    from automem.core import index
    from automem.core.recall import prefetch_block, system_prompt_block
    from automem.core.write_path import Candidate, remember

    [ok] = remember(store, [Candidate("The user drinks green tea every morning", wing="user")])
    _store_raw(store, "m_" + "e" * 24, "The user grows tea in the garden", created_at=1e19, updated_at=-1e19,
               restated=1e19)
    hits = store.recall("tea", k=5)
    assert {m.id for m, _ in hits} == {ok.id, "m_" + "e" * 24}
    [bad] = [m for m, _ in hits if m.id == "m_" + "e" * 24]
    assert 0 <= bad.created_at <= 253402300799 and bad.updated_at == 0 and bad.restated <= 10 ** 9
    block, ids = system_prompt_block(location, store.config, open_store=lambda: store)
    assert set(ids) == {ok.id, "m_" + "e" * 24} and "garden" in block
    text, ids = prefetch_block(location, store.config, "what about tea?", store=store)
    assert "m_" + "e" * 24 in ids
    index.mark_stale(location)  # a fresh reader rebuilds the index from the store: the keyword path
    text, ids = prefetch_block(location, store.config, "do I grow tea in the garden?")
    assert "m_" + "e" * 24 in ids


def test_a_huge_query_is_cut_before_it_is_embedded_or_segmented(location, store, monkeypatch):
    """A pasted 1 MB log costs what a long question costs: recall embeds and searches a bounded query."""
    from automem.core import index, recall
    from automem.core.write_path import Candidate, remember

    remember(store, [Candidate("The user's build server is called zephyr", wing="user")])
    seen = {"embed": [], "keyword": []}
    real_embed, real_kw = store.embed, index.keyword_search
    monkeypatch.setattr(store, "embed", lambda texts: seen["embed"].extend(map(len, texts)) or real_embed(texts))

    def spy(location_, query, *a, **kw):
        seen["keyword"].append(len(query))
        return real_kw(location_, query, *a, **kw)

    monkeypatch.setattr(index, "keyword_search", spy)
    log = "ERROR connection reset by peer at 0x7ff3\n" * 25_000 + "which build server did that run on? zephyr?"
    assert len(log) > 1_000_000
    hits = store.recall(log, k=3)
    assert seen["embed"] and max(seen["embed"]) <= recall.MAX_QUERY_CHARS
    assert seen["keyword"] and max(seen["keyword"]) <= recall.MAX_QUERY_CHARS
    assert any("zephyr" in m.text for m, _ in hits)  # the question at the end of the paste still counts
    seen["keyword"].clear()
    recall.prefetch_block(location, store.config, log)  # the fresh-process path (keyword half)
    assert seen["keyword"] and max(seen["keyword"]) <= recall.MAX_QUERY_CHARS


def test_bound_query_keeps_the_start_and_the_end():
    from automem.core.recall import MAX_QUERY_CHARS, bound_query

    assert bound_query("short question") == "short question"
    long = "A" * 10 + "x" * 100_000 + "the question?"
    cut = bound_query(long)
    assert len(cut) <= MAX_QUERY_CHARS and cut.startswith("A" * 10) and cut.endswith("the question?")


BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
automem:
  owner_ids: *f
"""


def test_a_yaml_alias_bomb_in_config_is_one_line_naming_the_file(root):
    """Nine to the sixth values here (the real bomb had nine levels: 50 s and 5 GB before a "please report")."""
    (root / "config.yaml").write_text(BOMB, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(Location(root, "default"))
    message = str(err.value)
    assert str(root / "config.yaml") in message and "alias" in message and "\n" not in message


def test_yaml_nested_too_deeply_in_config_is_one_line(root):
    (root / "config.yaml").write_text("automem:\n  owner_ids: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(Location(root, "default"))
    assert str(root / "config.yaml") in str(err.value) and "deep" in str(err.value)


def test_a_recursive_yaml_alias_in_config_is_one_line(root):
    (root / "config.yaml").write_text("a: &a [*a]\nautomem:\n  owner_ids: *a\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(Location(root, "default"))
    assert str(root / "config.yaml") in str(err.value)


def test_a_few_ordinary_aliases_in_config_still_load(root):
    (root / "config.yaml").write_text("ids: &ids [\"telegram:1\", \"discord:2\"]\nautomem:\n  owner_ids: *ids\n",
                                      encoding="utf-8")
    assert load_config(Location(root, "default")).owner_ids == ["telegram:1", "discord:2"]


def test_export_never_follows_a_symbolic_link(capsys, root, tmp_path):
    """Before: the export wrote through the link and chmod'ed its target to 0600."""
    run(capsys, "add", "The user likes green tea", "--hermes-home", str(root))
    target = tmp_path / "victim.txt"
    target.write_text("keep me", encoding="utf-8")
    os.chmod(target, 0o644)
    link = tmp_path / "export.jsonl"
    link.symlink_to(target)
    code, _, err = run(capsys, "export", str(link), "--hermes-home", str(root))
    assert code == 2 and err.count("\n") == 1 and "symbolic link" in err and "please report" not in err, err
    assert target.read_text(encoding="utf-8") == "keep me" and (target.stat().st_mode & 0o777) == 0o644
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.txt")
    code, _, err = run(capsys, "export", str(dangling), "--hermes-home", str(root))
    assert code == 2 and "symbolic link" in err and not (tmp_path / "nowhere.txt").exists()


def test_export_refuses_a_file_with_another_name_hard_linked_to_it(capsys, root, tmp_path):
    run(capsys, "add", "The user likes green tea", "--hermes-home", str(root))
    target = tmp_path / "victim.txt"
    target.write_text("keep me", encoding="utf-8")
    os.chmod(target, 0o644)
    os.link(target, tmp_path / "export.jsonl")
    code, _, err = run(capsys, "export", str(tmp_path / "export.jsonl"), "--hermes-home", str(root))
    assert code == 2 and "link" in err and target.read_text(encoding="utf-8") == "keep me"
    assert (target.stat().st_mode & 0o777) == 0o644

