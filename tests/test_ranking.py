"""Recall ranking: the vector order, re-ranked by the concepts a memory shares with the question."""

from __future__ import annotations

from automem.core.ranking import query_overlap, rerank
from automem.core.write_path import Candidate, remember


def test_overlap_meets_across_languages():
    assert query_overlap("我们的持续集成跑在哪个平台上？", "Migrated the CI pipeline to GitHub Actions") > 0
    assert query_overlap("Which of my posts got the most readers?", "发布了关于Raft的长文，阅读量过万") > 0
    assert query_overlap("你喜欢什么颜色", "The deploy runs at 3am") == 0


def test_rerank_moves_a_memory_sharing_the_question_concepts_up_and_keeps_distances():
    hits = [("unrelated", 0.50), ("shares concepts", 0.55)]
    texts = {"unrelated": "每篇文章末尾都要列出参考链接", "shares concepts": "Migrated the CI pipeline to GitHub Actions"}
    ranked = rerank("我们的持续集成现在跑在哪里？", hits, texts.get, k=2, weight=0.4)
    assert [item for item, _ in ranked] == ["shares concepts", "unrelated"]
    assert dict(ranked) == dict(hits)  # distances unchanged
    assert rerank("我们的持续集成现在跑在哪里？", hits, texts.get, k=1, weight=0) == hits[:1]


def test_store_recall_is_the_search_pool_reranked_within_visibility(store):
    remember(store, [Candidate("Migrated the CI pipeline from Jenkins to GitHub Actions", wing="episodic"),
                     Candidate("用户喜欢暗色模式", wing="user", profile="editor"),
                     Candidate("每篇文章末尾都要列出参考链接", wing="instruction"),
                     Candidate("Every post needs a cover image", wing="instruction")])
    query = "持续集成用的是什么？"
    pool = store.search(query, k=store.config.recall_pool, profile="default")
    expected = rerank(query, pool, lambda m: m.text, 3, store.config.recall_rerank_weight)
    got = store.recall(query, k=3, profile="default")
    assert [m.id for m, _ in got] == [m.id for m, _ in expected]
    assert got[0][0].text.startswith("Migrated the CI pipeline")
    assert all(m.profile == "default" for m, _ in got)  # editor's persona stays invisible
