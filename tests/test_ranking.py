"""Recall ranking: the vector and keyword halves fused, with the concepts a memory shares with the question."""

from __future__ import annotations

import random

import pytest

from automem.core.ranking import fuse, query_overlap, relatedness
from automem.core.write_path import Candidate, remember


def test_overlap_meets_across_languages():
    assert query_overlap("我们的持续集成跑在哪个平台上？", "Migrated the CI pipeline to GitHub Actions") > 0
    assert query_overlap("Which of my posts got the most readers?", "发布了关于Raft的长文，阅读量过万") > 0
    assert query_overlap("你喜欢什么颜色", "The deploy runs at 3am") == 0


def test_fuse_moves_a_memory_sharing_the_question_concepts_up_and_keeps_distances():
    hits = [("unrelated", 0.50), ("shares concepts", 0.55)]
    texts = {"unrelated": "每篇文章末尾都要列出参考链接", "shares concepts": "Migrated the CI pipeline to GitHub Actions"}
    ranked = fuse("我们的持续集成现在跑在哪里？", hits, [], str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.4)
    assert [item for item, _ in ranked] == ["shares concepts", "unrelated"]
    assert dict(ranked) == dict(hits)  # distances unchanged
    assert fuse("我们的持续集成现在跑在哪里？", hits, [], str, texts.get, k=1, keyword_weight=2.0,
                concept_weight=0) == hits[:1]


def test_relatedness_rises_from_nothing_to_full_across_the_gate():
    assert relatedness(-0.2) == relatedness(0.05) == 0.0
    assert relatedness(0.15) == pytest.approx(0.5)
    assert relatedness(0.25) == relatedness(0.9) == 1.0


def test_a_keyword_match_the_embedding_calls_unrelated_does_not_outrank_a_related_memory():
    # "never" is the only word the instruction shares with the question; the embedding finds the allergy related
    texts = {"allergy": "The user is allergic to shellfish", "style": "Never use exclamation marks in blog posts"}
    vector = [("allergy", 1 - 0.23), ("style", 1 - 0.03)]
    keyword = [("style", 4.2, 1 - 0.03)]
    query = "What must a restaurant never serve me?"
    ranked = fuse(query, vector, keyword, str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.0)
    assert [item for item, _ in ranked] == ["allergy", "style"]
    # without the gate the one shared word wins: what the gate is for
    ungated = fuse(query, vector, keyword, str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.0,
                   keyword_gate=None)
    assert [item for item, _ in ungated] == ["style", "allergy"]
    # a keyword match on a related memory counts in full
    related = [("style", 4.2, 1 - 0.30)]
    got = fuse(query, [("allergy", 1 - 0.23), ("style", 1 - 0.30)], related, str, texts.get, k=2,
               keyword_weight=2.0, concept_weight=0.0)
    assert [item for item, _ in got] == ["style", "allergy"]


def test_fuse_analyses_only_candidates_that_can_reach_the_top_k_and_ranks_as_if_it_analysed_all():
    rnd = random.Random(7)
    words = ["coffee", "vim", "deploy", "Chengdu", "咖啡", "编辑器", "部署", "成都", "blog", "博客"]
    for trial in range(30):
        texts = {f"m{i}": " ".join(rnd.sample(words, 3)) for i in range(40)}
        vector = [(i, rnd.uniform(0.2, 1.0)) for i in texts]
        keyword = [(i, rnd.uniform(0.1, 9.0), dict(vector)[i]) for i in rnd.sample(sorted(texts), 12)]
        query = " ".join(rnd.sample(words, 2))
        analysed = []

        def text_of(i):
            analysed.append(i)
            return texts[i]

        got = fuse(query, vector, keyword, str, text_of, k=5, keyword_weight=2.0, concept_weight=0.4)
        best = max(s for _, s, _ in keyword)
        kw = {i: s / best for i, s, _ in keyword}
        sim = {i: 1 - d for i, d in vector}
        full = sorted(texts, key=lambda i: (-(sim[i] + 2.0 * kw.get(i, 0.0) * relatedness(sim[i])
                                               + 0.4 * query_overlap(query, texts[i])), list(texts).index(i)))
        assert [i for i, _ in got] == full[:5], trial
        assert len(set(analysed)) < len(texts)


def test_the_tuning_script_scores_its_shipped_setting_as_recall_ranks():
    """scripts/tune_recall.py scores settings over cached features; at the shipped setting its order is fuse's, so a
    figure it prints for that row is what `Store.recall` would get."""
    import importlib.util
    import sys
    from pathlib import Path

    scripts = Path(__file__).resolve().parent.parent / "scripts"
    sys.path.insert(0, str(scripts))
    try:
        spec = importlib.util.spec_from_file_location("tune_recall", scripts / "tune_recall.py")
        tune = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tune)
    finally:
        sys.path.remove(str(scripts))
    p = tune.shipped_setting()
    rnd = random.Random(11)
    words = ["coffee", "vim", "deploy", "Chengdu", "咖啡", "编辑器", "部署", "成都", "blog", "博客"]
    for trial in range(30):
        texts = {f"m{i}": " ".join(rnd.sample(words, 3)) + f" #{i}" for i in range(30)}  # distinct texts
        dist = {i: rnd.uniform(0.2, 1.0) for i in texts}
        vector = [(i, dist[i]) for i in rnd.sample(sorted(texts), 20)]
        keyword = [(i, rnd.uniform(0.1, 9.0), dist[i]) for i in rnd.sample(sorted(texts), 12)]
        cov = {i: rnd.uniform(0.0, 1.0) for i in texts}
        query = " ".join(rnd.sample(words, 2))
        got = fuse(query, vector, keyword, str, texts.get, k=5, keyword_weight=p["kw"], concept_weight=p["ov"],
                   coverage=lambda text: cov["m" + text.rsplit("#", 1)[1]])
        best = max(s for _, s, _ in keyword)
        cands: dict[str, dict] = {}
        for rank, (i, d) in enumerate(vector):
            cands[i] = {"id": i, "sim": 1 - d, "vrank": rank, "kw": 0.0, "krank": None}
        for rank, (i, s, d) in enumerate(keyword):
            c = cands.setdefault(i, {"id": i, "sim": 1 - d, "vrank": None})
            c["kw"], c["krank"] = s / best, rank
        for i, c in cands.items():
            c["cov"], c["ov"] = cov[i], query_overlap(query, texts[i])
        assert tune.ranked(list(cands.values()), p, 5) == [i for i, _ in got], trial


def test_store_recall_finds_the_other_language_within_visibility(store):
    remember(store, [Candidate("Migrated the CI pipeline from Jenkins to GitHub Actions", wing="episodic"),
                     Candidate("用户喜欢暗色模式", wing="user", profile="editor"),
                     Candidate("每篇文章末尾都要列出参考链接", wing="instruction"),
                     Candidate("Every post needs a cover image", wing="instruction")])
    query = "持续集成用的是什么？"
    got = store.recall(query, k=3, profile="default")
    assert got[0][0].text.startswith("Migrated the CI pipeline")
    assert all(m.profile == "default" for m, _ in got)  # editor's persona stays invisible
