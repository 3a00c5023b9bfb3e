"""Recall ranking: the vector and keyword halves fused, with the concepts a memory shares with the question."""

from __future__ import annotations

import random

import pytest

from automem.core.ranking import QUESTION_PENALTY, fuse, query_overlap, question_share, relatedness
from automem.core.write_path import Candidate, remember


def test_overlap_meets_across_languages():
    assert query_overlap("我们的持续集成跑在哪个平台上？", "Migrated the CI pipeline to GitHub Actions") > 0
    assert query_overlap("Which of my posts got the most readers?", "发布了关于Raft的长文，阅读量过万") > 0
    assert query_overlap("你喜欢什么颜色", "The deploy runs at 3am") == 0


def test_fuse_moves_a_memory_sharing_the_question_concepts_up_and_keeps_distances():
    hits = [("unrelated", 0.50), ("shares concepts", 0.55)]
    texts = {"unrelated": "每篇文章末尾都要列出参考链接",
             "shares concepts": "Migrated the CI pipeline to GitHub Actions"}
    ranked = fuse("我们的持续集成现在跑在哪里？", hits, [], str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.4)
    assert [item for item, _ in ranked] == ["shares concepts", "unrelated"]
    assert dict(ranked) == dict(hits)  # distances unchanged
    assert fuse("我们的持续集成现在跑在哪里？", hits, [], str, texts.get, k=1, keyword_weight=2.0,
                concept_weight=0) == hits[:1]


def test_relatedness_rises_from_nothing_to_full_across_the_gate():
    assert relatedness(-0.2) == relatedness(0.1) == 0.0
    assert relatedness(0.2) == pytest.approx(0.5)
    assert relatedness(0.3) == relatedness(0.9) == 1.0


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


def test_question_share_counts_the_sentences_that_ask():
    assert question_share("What's the band?") == 1.0
    assert question_share("Wow! Did you see that band?") == 0.5
    assert question_share("用户问：怎么办？我不知道。") == 0.5
    assert question_share('"Really?" she said.') == 0.0  # a quoted question inside a statement
    assert question_share("See https://example.com/?q=1 for the docs.") == 0.0  # a "?" inside a word ends nothing
    assert question_share("The user uses vim, not nano.") == question_share("") == 0.0


def test_a_memory_that_only_asks_ranks_below_the_one_that_answers():
    # a chat stored as it was said: the friend's question is nearer the question, the reply holds the answer
    texts = {"asks": "Caroline: Wow, what a fun moment! What's the band?",
             "answers": "Melanie: It was Matt Patterson, he is so talented!"}
    query = "Which band did Melanie see?"
    vector = [("asks", 1 - 0.41), ("answers", 1 - 0.34)]
    ranked = fuse(query, vector, [], str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.0)
    assert [item for item, _ in ranked] == ["answers", "asks"]
    unpenalised = fuse(query, vector, [], str, texts.get, k=2, keyword_weight=2.0, concept_weight=0.0,
                       question_penalty=0.0)
    assert [item for item, _ in unpenalised] == ["asks", "answers"]


def test_fuse_analyses_only_candidates_that_can_reach_the_top_k_and_ranks_as_if_it_analysed_all(monkeypatch):
    from automem.core import ranking

    analysed = []

    def counting_overlap(query, text):
        analysed.append(text)
        return query_overlap(query, text)

    monkeypatch.setattr(ranking, "query_overlap", counting_overlap)
    rnd = random.Random(7)
    words = ["coffee", "vim", "deploy", "Chengdu", "咖啡", "编辑器", "部署", "成都", "blog", "博客"]
    for trial in range(30):
        texts = {f"m{i}": " ".join(rnd.sample(words, 3)) + rnd.choice(["", "?", ". 为什么？"]) + f" #{i}"
                 for i in range(40)}
        vector = [(i, rnd.uniform(0.2, 1.0)) for i in texts]
        keyword = [(i, rnd.uniform(0.1, 9.0), dict(vector)[i]) for i in rnd.sample(sorted(texts), 12)]
        query = " ".join(rnd.sample(words, 2))
        analysed.clear()
        got = fuse(query, vector, keyword, str, texts.get, k=5, keyword_weight=2.0, concept_weight=0.4)
        best = max(s for _, s, _ in keyword)
        kw = {i: s / best for i, s, _ in keyword}
        sim = {i: 1 - d for i, d in vector}
        full = sorted(texts, key=lambda i: (-(sim[i] + 2.0 * kw.get(i, 0.0) * relatedness(sim[i])
                                               + 0.4 * query_overlap(query, texts[i])
                                               - QUESTION_PENALTY * question_share(texts[i])), list(texts).index(i)))
        assert [i for i, _ in got] == full[:5], trial
        assert len(set(analysed)) < len(texts)


def test_the_tuning_grid_scores_its_shipped_setting_as_recall_ranks():
    """`python -m scripts.tune_recall` scores settings over cached features (tests/support/fusion_grid.py); at the
    shipped setting its order is fuse's, so a figure it prints for that row is what `Store.recall` would get."""
    from tests.support import fusion_grid as tune

    p = tune.shipped_setting()
    rnd = random.Random(11)
    words = ["coffee", "vim", "deploy", "Chengdu", "咖啡", "编辑器", "部署", "成都", "blog", "博客"]
    for trial in range(30):
        texts = {f"m{i}": " ".join(rnd.sample(words, 3)) + ("?" if i % 3 else "") + f" #{i}"  # distinct texts
                 for i in range(30)}
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
            cands[i] = {"id": i, "text": texts[i], "sim": 1 - d, "vrank": rank, "kw": 0.0, "krank": None}
        for rank, (i, s, d) in enumerate(keyword):
            c = cands.setdefault(i, {"id": i, "text": texts[i], "sim": 1 - d, "vrank": None})
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
