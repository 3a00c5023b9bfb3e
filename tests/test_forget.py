"""Forget forgets: after `automem forget`, no file under the Hermes root and no export holds the memory's words.

The grep reads every byte of every file under the root (Chroma's database and segment files included), for the
text as is and as JSON escapes it. It is shown to work on the same files: the memories that were not forgotten are
found in them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from automem.cli import main
from automem.config import Config
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.extract.pipeline import enqueue, extract_now
from automem.extract.spool import pending_jobs
from automem.log import text_forms
from automem.paths import Location
from automem.text import normalise

FORGET = "用户的狗叫Biscuit，每天早上七点遛狗"
KEEP = "I use vim, never suggest nano to me"


def files_under(top: Path) -> list[Path]:
    return sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink())


def grep(top: Path, text: str) -> list[str]:
    """Files under `top` whose bytes hold `text` in any form automem writes (as written and normalised, each as
    is and JSON-escaped)."""
    needles = [form.encode("utf-8") for form in text_forms([text])]
    return [str(p.relative_to(top)) for p in files_under(top) if any(n in p.read_bytes() for n in needles)]


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, [json.loads(line) for line in out.out.splitlines() if line.startswith("{")], out.err


@pytest.mark.embedded_only("Chroma's own files on disk")
def test_forget_then_grep_every_file_under_the_root_and_an_export(capsys, root, tmp_path):
    home = ["--hermes-home", str(root)]
    loc = Location(root, "default")
    _, [gone], _ = cli(capsys, "add", FORGET, "--json", *home)
    _, [kept], _ = cli(capsys, "add", KEEP, "--json", *home)
    for i in range(12):
        cli(capsys, "add", f"Project {i} deploys with make release-{i}", "--wing", "instruction", *home)
    # the words also reached the log (hashed), the snapshot, an extraction job and a job still waiting in the spool
    chat = [{"role": "user", "content": f"记住：{FORGET}"}, {"role": "assistant", "content": "好的"}]
    extract_now(loc, chat, config=Config(extract_backend="rules"))
    enqueue(loc, [{"role": "user", "content": f"还有，{FORGET}。"}, {"role": "assistant", "content": "嗯"}],
            session_id="pending", config=Config(auto_extract=False))
    assert pending_jobs(loc) and grep(root, FORGET)  # there is something to find before the forget
    before = tmp_path / "before.jsonl"
    assert cli(capsys, "export", str(before), *home)[0] == 0
    assert normalise(FORGET) in before.read_text(encoding="utf-8") and normalise(FORGET) != FORGET

    total_before = cli(capsys, "stats", "--json", *home)[1][0]["total"]
    listed = cli(capsys, "list", "--all", "--json", *home)[1]
    ids = [m["id"] for m in listed if normalise(FORGET) in (m["text"] or "")]
    assert gone["id"] in ids
    code, out, err = cli(capsys, "forget", *ids, "--json", *home)
    assert code == 0 and all(o["changed"] for o in out), err

    assert grep(root, FORGET) == []
    assert "automem/chroma/chroma.sqlite3" in grep(root, KEEP)  # the same grep finds what was not forgotten
    after = tmp_path / "after.jsonl"
    assert cli(capsys, "export", str(after), "--forgotten", *home)[0] == 0
    dump = after.read_text(encoding="utf-8")
    assert all(form not in dump for form in text_forms([FORGET])) and KEEP in dump
    assert {json.loads(x)["id"] for x in dump.splitlines() if json.loads(x)["status"] == "forgotten"} == set(ids)
    assert pending_jobs(loc)[0].transcript == [["assistant", "嗯"]]  # the sentence that said it is gone

    # the store is whole afterwards: the others are found, the forgotten one is not, writes go on
    _, hits, _ = cli(capsys, "search", "which editor do I use", "--json", *home)
    assert hits[0]["id"] == kept["id"] and all(h["id"] not in ids for h in hits)
    _, hits, _ = cli(capsys, "search", "狗叫什么名字", "--json", "-k", "20", *home)
    assert all(h["id"] not in ids for h in hits)
    assert cli(capsys, "add", "Always write dates as RFC3339", "--wing", "instruction", *home)[0] == 0
    _, [stats], _ = cli(capsys, "stats", "--json", *home)
    assert stats["total"] == total_before - len(ids) + 1


@pytest.mark.embedded_only("Chroma's own files on disk")
def test_forget_in_a_store_whose_vector_index_has_persisted(location):
    """Past hnsw:sync_threshold (1000) Chroma persists the vector index and prunes its log: the purge keeps the
    index consistent there too (a reopened store finds the neighbours, not the forgotten one)."""
    rng = random.Random(7)
    store = Store(location, Config())
    from automem.core.memory import Memory

    def vec():
        v = [rng.gauss(0, 1) for _ in range(512)]
        n = sum(x * x for x in v) ** 0.5
        return [x / n for x in v]

    mems = [Memory(id=f"m_{i:024x}", text=f"bulk memory number {i} about the quarterly zebra report", wing="user",
                   profile="default", created_at=1700000000 + i, updated_at=1700000000 + i) for i in range(1100)]
    vectors = [vec() for _ in mems]
    target = mems[1050]
    target.text = "the secret garden key hangs behind the blue door"
    for start in range(0, len(mems), 500):
        store.write_records(mems[start:start + 500], vectors[start:start + 500])
    assert store.forget([target.id]) == [target.id]
    store.close()
    assert grep(location.root, target.text) == []
    again = Store(location, Config())
    try:
        hits = again.search(embedding=vectors[1050], k=3)
        assert target.id not in [m.id for m, _ in hits] and len(hits) == 3
        assert again.count() == 1099
        hits = again.search(embedding=vectors[7], k=1)
        assert hits[0][0].id == mems[7].id and hits[0][1] < 1e-4
    finally:
        again.close()


def test_forget_on_either_backend_leaves_nothing_under_the_root_and_stops_automatic_sources(store, location):
    [d] = remember(store, [Candidate(FORGET, wing="user")])
    [k] = remember(store, [Candidate(KEEP, wing="user")])
    reader = Store(location, store.config)  # another process's view, opened before the forget
    assert d.id in [m.id for m, _ in reader.search(FORGET, k=5)]
    store.close()  # writes the recall snapshot (with both memories)
    assert grep(location.root, FORGET)
    assert store.forget([d.id]) == [d.id]
    assert d.id not in [m.id for m, _ in reader.search(FORGET, k=5)]
    reader.close()
    store.close()
    assert grep(location.root, FORGET) == []
    assert [t["id"] for t in store.tombstones()] == [d.id]
    # a transcript that says it again does not bring it back; the user saying it explicitly does
    [again] = remember(store, [Candidate(FORGET, wing="user", room="auto-extract")])
    assert again.action == "rejected"
    assert grep(location.root, FORGET) == []  # rejected words are not logged either
    [back] = remember(store, [Candidate(FORGET, wing="user", room="tool")])
    assert back.action == "new" and store.tombstones() == [] and store.get([k.id])


def test_forgetting_a_memory_forgets_the_restatements_merged_into_it_and_its_earlier_wordings(store, location):
    """A restatement a judge merged is kept as a record superseded by the memory it restates, and an edit keeps the
    wording it replaced: both are copies of the forgotten fact, so they go with it. A value it replaced (an update)
    is another fact and stays."""
    from automem.core.correction import edit

    old, far, fixed = "用户在Google做软件工程师", "我是谷歌的码农", "用户在Google做后端软件工程师"

    def reading(pairs):  # a judge that reads: the far restatement is one, the control pair and the rest are not
        return ["duplicate" if (new, other) == (far, old) else "new" for new, other, _ in pairs]

    [was] = remember(store, [Candidate("The user lives in Chicago.")])
    [now] = remember(store, [Candidate("The user moved to Austin.")])
    assert now.action == "update" and now.superseded == [was.id]
    [d] = remember(store, [Candidate(old)])
    [merged] = remember(store, [Candidate(far)], judge=reading)
    assert merged.action == "duplicate" and merged.id == d.id
    edited = edit(store, d.id, fixed)
    assert {normalise(t) for t in (old, far, fixed)} <= {m.text for m in store.iter_records()}
    assert store.forget([edited.id, now.id]) == [edited.id, now.id]
    store.close()
    for text in (old, far, fixed, "The user moved to Austin."):
        assert grep(location.root, text) == [], text
    assert [m.text for m in store.iter_records()] == [normalise("The user lives in Chicago.")]


@pytest.mark.embedded_only("Chroma's own files on disk")
def test_a_search_right_after_a_forget_does_not_write_the_words_back_into_the_vector_index(tmp_path, config):
    """The first query after the forget's reopen makes Chroma load and persist the vector index again, its unused
    capacity from this process's heap, which still holds the words: the search must leave zeros there. (Before
    the store tidied after reads, about 4 in 10 of these rounds found the words in data_level0.bin.)"""
    from automem.hermes.session import run_tool

    for round_ in range(8):
        loc = Location(tmp_path / f"root{round_}", "default")
        store = Store(loc, config)
        try:
            out = json.loads(run_tool(store, "default", "automem_remember", {"text": FORGET, "category": "persona"}))
            run_tool(store, "default", "automem_forget", {"ids": [out["id"]]})
            run_tool(store, "default", "automem_search", {"query": "狗叫什么"})
            assert grep(loc.root, FORGET) == [], round_  # before close: a killed process leaves what is on disk
        finally:
            store.close()
        assert grep(loc.root, FORGET) == [], round_


def test_the_agent_tool_forget_removes_the_words_too(location, config):
    from automem.hermes.session import run_tool

    store = Store(location, config)
    try:
        out = json.loads(run_tool(store, "default", "automem_remember", {"text": FORGET, "category": "persona"}))
        assert out["decision"] == "new"
        res = json.loads(run_tool(store, "default", "automem_forget", {"ids": [out["id"]]}))
        assert res["forgotten"] == [out["id"]]
        assert json.loads(run_tool(store, "default", "automem_search", {"query": "狗叫什么"}))["results"] == []
    finally:
        store.close()
    assert grep(location.root, FORGET) == []


def test_memories_forgotten_by_an_older_automem_are_forgotten_properly_on_the_next_forget(location):
    """Before, forget only set status=forgotten and kept the words: the next forget (of anything) deletes them."""
    from automem.core.memory import Memory

    store = Store(location, Config())
    old = Memory(id="m_" + "a" * 24, text=FORGET, wing="user", profile="default", status="forgotten",
                 created_at=1, updated_at=2)
    store.write_records([old], store.embed([old.text]))
    [k] = remember(store, [Candidate(KEEP, wing="user")])
    assert store.forget([k.id]) == [k.id]
    store.close()
    assert grep(location.root, FORGET) == [] and grep(location.root, KEEP) == []
    assert sorted(t["id"] for t in store.tombstones()) == sorted([old.id, k.id])
    store.close()


# -- forget is final: no word in any log, no queued job brings it back, no old export either ----------------------
DOG = "用户的狗叫Biscuit，每天早上七点遛狗"
NAME = b"biscuit"  # the memory's one distinctive word: no file under the root may hold it, in any case


def holding(top: Path, word: bytes = NAME) -> list[str]:
    return [str(p.relative_to(top)) for p in files_under(top) if word in p.read_bytes().lower()]


def forget_all_holding(store, word: str = "biscuit") -> list[str]:
    ids = [m.id for m in store.iter_records() if word in m.text.lower()]
    assert ids
    store.forget(ids)
    return ids


def test_the_log_keeps_no_word_of_a_forgotten_memory_in_reasons_or_errors(location, config, fake_llm):
    """Before: the decision log kept "(name biscuit -> muffin)" and the like in its `reason` strings, and an LLM
    error echoing the transcript kept its words in the job's log line and job file."""
    from automem.extract.pipeline import drain
    from automem.log import read_events

    store = Store(location, config)
    try:
        [first] = remember(store, [Candidate(DOG, wing="user")])
        [renamed] = remember(store, [Candidate("用户的狗改名叫Muffin，每天早上七点遛狗", wing="user")])
        assert renamed.action == "update" and "biscuit" in renamed.reason.lower()  # shown to who asked: fine
        remember(store, [Candidate("The user's dog Biscuit is walked at 7 every morning", wing="user")])
        # an extraction whose first attempt failed with an answer echoing the transcript
        fake_llm.set_rules([{"times": 1, "status": 503, "error": "upstream choked on 我的狗Biscuit七点要遛"},
                         {"match": {"system": "记忆提取助手"}, "json": {"persona": ["用户养了一只叫Biscuit的狗"]}}])
        cfg = Config(**{**config.__dict__, "extract_backend": "openai", "extract_base_url": fake_llm.url,
                        "extract_api_key": "k-1", "spool_backoff_seconds": 0.05, "auto_extract": False})
        enqueue(location, [{"role": "user", "content": "我的狗Biscuit七点要遛"},
                           {"role": "assistant", "content": "好"}], session_id="s1", config=cfg)
        drain(location, cfg, wait_seconds=5, store=store)
        assert any("biscuit" in m.text.lower() for m in store.iter_records(where={"room": "auto-extract"}))
        assert holding(location.automem_dir / "logs")  # there is something to find before the forget
        forget_all_holding(store)
        store.close()
        assert holding(location.root) == []
        # what the log keeps of a decision: its kind and its distance
        reasons = [d["reason"] for e in read_events(location, "write") for d in e["decisions"]]
        assert any(r.startswith("announced as a change of the same slot (distance") for r in reasons), reasons
    finally:
        store.close()


def test_a_job_queued_before_a_forget_loses_the_forgotten_sentences_by_words_and_by_meaning(location, config):
    """Before: a job queued before the forget extracted the fact again afterwards, in other words (other hash)."""
    from automem.extract.pipeline import drain
    from automem.extract.spool import dead_jobs

    store = Store(location, config)
    try:
        [gone] = remember(store, [Candidate(DOG, wing="user")])
        chat = [{"role": "user", "content": "记住：我家狗的名字是Biscuit"}, {"role": "assistant", "content": "好的"},
                {"role": "user", "content": "My dog's name is Biscuit, by the way. 记住：我对花生过敏"},
                {"role": "assistant", "content": "明白，Biscuit 和花生我都记下了"}]
        enqueue(location, chat, session_id="pending", config=Config(auto_extract=False))
        assert holding(location.spool_dir)
        store.forget([gone.id])
        assert holding(location.root) == []  # the pending job's transcript too
        [job] = pending_jobs(location)
        text = json.dumps(job.transcript, ensure_ascii=False)
        assert "花生" in text  # what was not forgotten stays to be extracted
        drain(location, Config(extract_backend="rules"), store=store)
        assert not pending_jobs(location) and not dead_jobs(location)
        texts = [m.text for m in store.iter_records()]
        assert any("花生" in t for t in texts) and not any("biscuit" in t.lower() for t in texts), texts
    finally:
        store.close()


class _ForgetsWhileAnswering:
    """An extraction backend during whose call the user forgets the fact: the drainer read the words before."""

    name = "openai"

    def __init__(self, store, answer: dict):
        self.store, self.answer, self.calls = store, answer, 0

    def complete(self, messages, max_tokens=None):
        from automem.extract.llm import Completion

        self.calls += 1
        if self.calls == 1:
            forget_all_holding(self.store)
        return Completion(json.dumps(self.answer, ensure_ascii=False), 10, 10, 1.0, "fake", "stop")


def test_a_drainer_already_working_on_an_older_job_cannot_bring_the_fact_back(location, config):
    from automem.core import erase
    from automem.extract.pipeline import drain

    store = Store(location, config)
    try:
        remember(store, [Candidate(DOG, wing="user")])
        enqueue(location, [{"role": "user", "content": "我的狗叫Biscuit，每天七点遛它。我对花生过敏。"},
                           {"role": "assistant", "content": "好"}], session_id="old", config=Config(auto_extract=False))
        backend = _ForgetsWhileAnswering(store, {"persona": ["The user has a dog named Biscuit", "用户对花生过敏"]})
        report = drain(location, Config(extract_backend="openai", dedup_judge=False), store=store, backend=backend)
        assert report.done == 1 and backend.calls == 1
        decisions = report.jobs[0]["decisions"]
        assert [d["decision"] for d in decisions] == ["rejected", "new"], decisions
        assert "forgot" in decisions[0]["reason"]
        texts = [m.text for m in store.iter_records()]
        assert not any("biscuit" in t.lower() for t in texts) and any("花生" in t for t in texts)
        # the record that stopped it keeps no words, and goes once no job older than the forget is left
        assert not erase.guard_path(location).exists()
        # a conversation after the forget may say it again: that is new
        enqueue(location, [{"role": "user", "content": "我又养了一只狗，叫Biscuit"},
                           {"role": "assistant", "content": "好"}], session_id="new", config=Config(auto_extract=False))
        backend = _ForgetsWhileAnswering(store, {"persona": ["The user has a dog named Biscuit"]})
        backend.calls = 1  # no forget this time
        report = drain(location, Config(extract_backend="openai", dedup_judge=False), store=store, backend=backend)
        assert [d["decision"] for d in report.jobs[0]["decisions"]] == ["new"]
    finally:
        store.close()


def test_import_of_an_export_made_before_a_forget_skips_the_forgotten_unless_asked(capsys, root, tmp_path):
    """Before: importing an export made before the forget brought the memory back without a word."""
    home = ["--hermes-home", str(root)]
    _, [gone], _ = cli(capsys, "add", DOG, "--json", *home)
    _, [kept], _ = cli(capsys, "add", KEEP, "--json", *home)
    before = tmp_path / "before.jsonl"
    assert cli(capsys, "export", str(before), *home)[0] == 0
    cli(capsys, "forget", gone["id"], *home)
    # the same line under another id (an export edited, or of another root): the words are what was forgotten
    other = json.loads(before.read_text(encoding="utf-8").splitlines()[0])
    assert other["id"] == gone["id"]
    other["id"] = "m_" + "f" * 24
    with open(before, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(other, ensure_ascii=False) + "\n")

    code, [res], err = cli(capsys, "import", str(before), "--json", *home)
    assert code == 0 and res["imported"] == 1 and res["skipped_forgotten"] == 2, (res, err)
    assert "2 lines skipped" in err and "forgotten" in err and "--restore-forgotten" in err
    ids = {m["id"] for m in cli(capsys, "list", "--json", *home)[1]}
    assert ids == {kept["id"]}
    assert holding(root) == []

    code, [res], err = cli(capsys, "import", str(before), "--restore-forgotten", "--json", *home)
    assert code == 0 and res["imported"] == 3 and res["skipped_forgotten"] == 0
    ids = {m["id"] for m in cli(capsys, "list", "--json", *home)[1]}
    assert ids == {kept["id"], gone["id"], "m_" + "f" * 24}
    assert [t for t in cli(capsys, "list", "--all", "--json", *home)[1] if t.get("tombstone")] == []
