"""Recall quality on tests/data/recall_bank.json, through the write path and the real store (embedded and server).

The bank had 40 memories and 49 questions; it now has 74 memories (34 of them near-miss distractors: a memory that
shares words or topic with a target but does not answer its questions) and 69 questions, all worded unlike the
memories, 40 of them in the other language. The floors below were set on the 49-question bank (hit@3 93.9%);
on the extended bank at bc0292b and d136539 (first contact, tests/data/RECALL_FIRST_CONTACT.md) search hit@3 is 91.3%
(cross-language 90.0%), hit@1 73.9%, so they still hold as regression floors; the issue's target (hit@3 >= 95%,
first turn >= 92%) is what `python -m scripts.eval_recall` exits 1 on. The bank's loader and its search
evaluation are tests/support/recall_eval.py.

tests/data/recall_bank_heldout.json is the held-out bank: other people and topics, written before any rule was
tuned on it. Only its shape is tested here; no figure of it is asserted, so nothing is tuned to pass on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import recall_eval as ev
from tests.support.processes import processes_naming

REPO = Path(__file__).resolve().parent.parent
_results: dict[str, dict] = {}


@pytest.fixture
def result(store, backend) -> dict:
    """The bank loaded into this backend's fresh store and every question asked (once per backend)."""
    if backend not in _results:
        _results[backend] = ev.evaluate(store, ev.load_bank(), k=3)
    return _results[backend]


# bank -> (memories, questions, distractors) at least
SIZES = {"recall_bank.json": (70, 60, 25), "recall_bank_heldout.json": (40, 30, 15),
         "recall_bank_heldout2.json": (40, 30, 15), "recall_bank_heldout3.json": (40, 30, 15),
         "recall_bank_heldout4.json": (40, 30, 15)}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_the_bank_is_large_varied_and_cross_language(name):
    bank = ev.load_bank(REPO / "tests" / "data" / name)
    mems, questions = bank["memories"], bank["questions"]
    min_mems, min_questions, min_distractors = SIZES[name]
    assert len(mems) >= min_mems and len(questions) >= min_questions
    assert {m["lang"] for m in mems} == {"zh", "en"}
    assert {m["wing"] for m in mems} == {"user", "instruction", "episodic"}
    assert len({m["profile"] for m in mems}) >= 2
    assert sum(q["cross"] for q in questions) >= 8
    texts = {m["id"]: m["text"] for m in mems}
    lang = {m["id"]: m["lang"] for m in mems}
    # `cross` says what it means: the question is in another language than its memory
    assert [q["question"] for q in questions if q["cross"] != (lang[q["expect"][0]] != q["lang"])] == []
    # worded differently: no question contains its memory's text, and none is its memory's text
    assert not [q for q in questions for i in q["expect"] if texts[i] in q["question"] or q["question"] in texts[i]]
    # distractors: near misses of real targets, never also an expected answer of those targets' questions
    distractors = {m["id"]: m["distractor_of"] for m in mems if m.get("distractor_of")}
    assert len(distractors) >= min_distractors
    assert all(t in texts and t != d for d, targets in distractors.items() for t in targets)
    assert not [q["question"] for q in questions for d, targets in distractors.items()
                if d in q["expect"] and set(targets) & set(q["expect"])]


LATER_HELDOUT = ["recall_bank_heldout2.json", "recall_bank_heldout3.json", "recall_bank_heldout4.json",
                 "recall_bank_heldout5.json"]


@pytest.mark.parametrize("name", LATER_HELDOUT)
def test_the_later_heldout_banks_share_nothing_with_the_others(name):
    """recall_bank_heldout2/3/4/5.json were each written after the rules were tuned on the banks before them: none of
    their memories, ids or items (a question with the memory it expects), both languages in memories and questions,
    most questions cross-language. Two writers may word a question alike ("我对哪种抗生素过敏？" is in the second and
    the fifth bank), each about its own memory, but no more than one in twenty."""

    def items(bank):
        text = {m["id"]: m["text"] for m in bank["memories"]}
        return {(q["question"], text[e]) for q in bank["questions"] for e in q["expect"]}

    later = ev.load_bank(REPO / "tests" / "data" / name)
    others = [n for n in ["recall_bank.json", "recall_bank_heldout.json", *LATER_HELDOUT] if n != name]
    for other in (ev.load_bank(REPO / "tests" / "data" / n) for n in others):
        assert not {m["text"] for m in other["memories"]} & {m["text"] for m in later["memories"]}
        assert not {m["id"] for m in other["memories"]} & {m["id"] for m in later["memories"]}
        assert not items(other) & items(later)
        shared = {q["question"] for q in other["questions"]} & {q["question"] for q in later["questions"]}
        assert len(shared) * 20 <= len(later["questions"]), shared  # a coincidence, not a copied bank
    assert {q["lang"] for q in later["questions"]} == {"zh", "en"}
    assert sum(q["cross"] for q in later["questions"]) / len(later["questions"]) >= 0.5


def test_the_heldout_bank_is_its_own():
    """Other people and topics than the main bank: no shared memory or question, about half Chinese, about a third
    of the questions cross-language."""
    main, held = ev.load_bank(), ev.load_bank(ev.HELDOUT_BANK)
    assert not {m["text"] for m in main["memories"]} & {m["text"] for m in held["memories"]}
    assert not {q["question"] for q in main["questions"]} & {q["question"] for q in held["questions"]}
    assert not {m["id"] for m in main["memories"]} & {m["id"] for m in held["memories"]}
    qs, mems = held["questions"], held["memories"]
    assert 0.35 <= sum(q["lang"] == "zh" for q in qs) / len(qs) <= 0.65
    assert 0.35 <= sum(m["lang"] == "zh" for m in mems) / len(mems) <= 0.65
    assert 0.25 <= sum(q["cross"] for q in qs) / len(qs) <= 0.45


def test_every_bank_memory_is_stored_as_a_new_memory(result):
    # A bank memory judged a duplicate or an update of another would be a dedup error (or a bad bank).
    assert result["not_new"] == []


def test_recall_floors_hold(result):
    # Floors, not targets (scripts/eval_recall.py holds those: hit@3 95%, missed at 89.9%). hit@1 was 73.9% with
    # vectors and concepts alone: the hybrid ranking weighs keyword matches heavily for long English chats (LoCoMo,
    # scripts/eval_locomo.py: 33.8% vectors -> 63.9%), and this bank's distractors share the question's words on
    # purpose, so first place went to a distractor more often (53.6%) while hit@3 stayed and the first turn a new
    # session sees rose (the prefetch shows up to 15).
    figures = result["figures"]
    assert figures["all"]["hit@3"] >= 0.87, result["misses"]
    assert figures["same language"]["hit@3"] >= 0.85, result["misses"]
    assert figures["cross-language"]["hit@3"] >= 0.85, result["misses"]
    assert figures["all"]["hit@1"] >= 0.50, result["misses"]


def test_shown_text_is_compared_as_recall_shows_it():
    assert ev.shown_in("The user's cat\n is  called Miso", "- [persona] The user's cat is called Miso")
    assert ev.shown_in("see [automem:recall] here", "- [persona] " + ev.shown_form("see [automem:recall] here"))
    assert not ev.shown_in("The user's cat is called Miso", "- [persona] The user's sister has a dog")
    assert not ev.shown_in("  ", "anything")


@pytest.mark.slow  # an evaluation-corpus run: one fresh session process per question of the bank
def test_the_first_turn_runs_in_fresh_processes_and_leaves_nothing_running(tmp_path):
    """The first-turn measure on the main bank: one fresh session process per question (after a warm-up), no
    process failing, nothing left running under the temporary root. Floor: first contact was 56.5% at bc0292b, 59.4%
    at d136539 (the issue's target is 92%: eval_recall's exit status)."""
    bank = ev.load_bank()
    root = tmp_path / "hermes"
    search, ft = ev.measure(bank, root, k=3, with_first_turn=True)
    assert search["not_new"] == []
    assert ft["errors"] == [] and ft["warmup"]["error"] is None
    assert ft["figures"]["all"]["n"] == len(bank["questions"])
    assert ft["figures"]["all"]["first_turn"] >= 0.50, [r["question"] for r in ft["misses"]]
    assert processes_naming(root) == []
