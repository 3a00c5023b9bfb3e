"""`pinned` and `restated`: the memory's metadata for them, the write path counting restatements, `automem pin` /
`unpin`, and a pinned memory entering the system block first. Real ChromaDB on disk, the offline embeddings."""

from __future__ import annotations

import json

import pytest

from automem.cli import main
from automem.config import Config
from automem.core.memory import INT_KEYS, METADATA_KEYS, Memory
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.paths import Location


def run(capsys, *argv: str) -> tuple[int, list, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")], captured.err


@pytest.fixture
def home(root):
    return ["--hermes-home", str(root)]


def test_memory_carries_pinned_and_restated_and_old_records_read_as_zero():
    assert {"pinned", "restated"} <= set(METADATA_KEYS) and {"pinned", "restated"} <= set(INT_KEYS)
    old = Memory.from_record("m_1", "a memory from before", {"wing": "user", "profile": "default"})
    assert (old.pinned, old.restated) == (0, 0)
    assert old.metadata()["pinned"] == 0 and old.metadata()["restated"] == 0
    m = Memory.from_record("m_2", "pinned one", {"wing": "instruction", "pinned": True, "restated": "3"})
    assert (m.pinned, m.restated) == (1, 3) and "pinned" not in m.extra
    odd = Memory.from_record("m_3", "odd values", {"wing": "user", "pinned": 7, "restated": -2})
    assert (odd.pinned, odd.restated) == (1, 0)
    back = Memory.from_record(m.id, m.text, m.metadata())
    assert back == m


def test_a_duplicate_counts_as_one_restatement_per_write(root):
    store = Store(Location(root, "default"), Config())
    try:
        [first] = remember(store, [Candidate("I use vim, not nano", room="cli")])
        assert store.get([first.id])[0].restated == 0
        [again] = remember(store, [Candidate("I use vim, not nano", room="auto-extract")])
        assert again.action == "duplicate" and store.get([first.id])[0].restated == 1
        # one conversation saying it three times is one occasion, not three
        twice = remember(store, [Candidate("I use vim, not nano", room="auto-extract") for _ in range(3)])
        assert [d.action for d in twice] == ["duplicate"] * 3
        stored = store.get([first.id])[0]
        assert stored.restated == 2 and stored.status == "active"
    finally:
        store.close()


def test_pin_unpin_list_and_their_errors(capsys, home):
    _, [vim], _ = run(capsys, "add", "I use vim, not nano", "--json", *home)
    _, [rule], _ = run(capsys, "add", "Commit messages in English", "--wing", "instruction", "--json", *home)
    _, [event], _ = run(capsys, "add", "Yesterday we deployed the blog", "--wing", "episodic", "--json", *home)
    _, [other], _ = run(capsys, "add", "Dates in RFC3339", "--wing", "instruction", "--profile", "blog-writer",
                        "--json", *home)

    code, out, _ = run(capsys, "pin", vim["id"], rule["id"], "--json", *home)
    assert code == 0 and out == [{"id": vim["id"], "pinned": 1, "changed": True},
                                 {"id": rule["id"], "pinned": 1, "changed": True}]
    code, out, _ = run(capsys, "pin", vim["id"], "--json", *home)
    assert code == 0 and out == [{"id": vim["id"], "pinned": 1, "changed": False}]
    _, listed, _ = run(capsys, "list", "--json", *home)
    assert {m["id"]: m["pinned"] for m in listed} == {vim["id"]: 1, rule["id"]: 1, event["id"]: 0, other["id"]: 0}
    main(["list", *home])
    lines = capsys.readouterr().out.splitlines()
    assert [line.endswith("(pinned)") for line in lines if vim["id"] in line or rule["id"] in line] == [True, True]
    assert not any(line.endswith("(pinned)") for line in lines if event["id"] in line)
    main(["search", "which editor", *home])
    assert any(vim["id"] in line and line.endswith("(pinned)") for line in capsys.readouterr().out.splitlines())

    code, out, _ = run(capsys, "unpin", rule["id"], "--json", *home)
    assert code == 0 and out == [{"id": rule["id"], "pinned": 0, "changed": True}]
    main(["unpin", rule["id"], *home])
    assert capsys.readouterr().out.startswith("already unpinned")

    # each refusal: exit 2, one line, nothing changed
    for argv, message in [
        (["pin", "m_doesnotexist"], "no memory with id m_doesnotexist"),
        (["pin", vim["id"], "m_doesnotexist"], "no memory with id m_doesnotexist"),
        (["pin", event["id"]], "only persona (user) and instruction memories"),
        (["pin", other["id"]], f"automem pin {other['id']} --profile blog-writer"),
        (["pin", rule["id"], "--user", "telegram:1001"], "not of this --profile / --user"),
        (["unpin", other["id"], "--profile", "editor"], "is a memory of profile blog-writer"),
    ]:
        code, out, err = run(capsys, *argv, *home)
        assert code == 2 and out == [] and err.count("\n") == 1 and message in err, (argv, err)
    _, listed, _ = run(capsys, "list", "--json", "--all-profiles", *home)
    assert {m["id"] for m in listed if m["pinned"]} == {vim["id"]}


def test_a_superseded_or_forgotten_memory_cannot_be_pinned(capsys, home):
    _, [old], _ = run(capsys, "add", "项目统一用Python 3.11", "--wing", "instruction", "--json", *home)
    _, [new], _ = run(capsys, "add", "项目改用Python 3.12", "--wing", "instruction", "--json", *home)
    assert new["decision"] == "update"
    code, _, err = run(capsys, "pin", old["id"], *home)
    assert code == 2 and "not active" in err
    run(capsys, "forget", new["id"], *home)
    code, _, err = run(capsys, "pin", new["id"], *home)
    assert code == 2 and "no memory with id" in err


def test_pin_and_restated_survive_export_and_import(capsys, home, tmp_path):
    _, [vim], _ = run(capsys, "add", "I use vim, not nano", "--json", *home)
    run(capsys, "add", "I use vim, not nano", *home)  # a restatement
    run(capsys, "pin", vim["id"], *home)
    dump = tmp_path / "dump.jsonl"
    assert run(capsys, "export", str(dump), *home)[0] == 0
    [line] = [json.loads(x) for x in dump.read_text(encoding="utf-8").splitlines()]
    assert line["pinned"] == 1 and line["restated"] == 1
    other = ["--hermes-home", str(tmp_path / "other-root")]
    assert run(capsys, "import", str(dump), *other)[0] == 0
    _, [back], _ = run(capsys, "list", "--json", *other)
    assert back == line


def test_a_pinned_memory_enters_the_system_block_first(capsys, home, root):
    from automem.core import recall

    if "pinned" not in getattr(recall.RecallItem, "__dataclass_fields__", {}):
        pytest.skip("the recall snapshot does not carry `pinned` yet")
    import time

    now = int(time.time())
    lines = [{"id": "m_old", "text": "Never push to main directly", "wing": "instruction",
              "created_at": now - 400 * 86400, "updated_at": now - 400 * 86400}]
    lines += [{"id": f"m_new{i:02d}", "text": f"newer persona fact number {i:02d}", "wing": "user",
               "created_at": now - i, "updated_at": now - i} for i in range(20)]
    dump = root.parent / "block.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert run(capsys, "import", str(dump), *home)[0] == 0
    location = Location(root, "default")
    config = Config(recall_max_items=5)
    _, ids = recall.system_prompt_block(location, config)
    assert "m_old" not in ids and len(ids) == 5
    run(capsys, "pin", "m_old", *home)
    _, ids = recall.system_prompt_block(location, config)
    assert ids == ["m_old", "m_new00", "m_new01", "m_new02", "m_new03"]
