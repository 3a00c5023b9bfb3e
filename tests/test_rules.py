"""The offline rules extractor: explicit statements in Chinese and English, questions and chatter left alone."""

from __future__ import annotations

import pytest

from automem.extract.rules import classify, extract_statements, third_person

SEED_CHECK_1 = ["我习惯用vim编辑器，不要给我推荐nano", "我的项目统一用Python 3.11",
                "代码风格遵循PEP8，docstring用Google风格"]


def found(*texts):
    return [(i.category, i.text) for i in extract_statements(texts).items]


def test_seed_check_1():
    got = found(*SEED_CHECK_1)
    assert got == [("persona", "用户习惯用vim编辑器，不要给用户推荐nano"),
                   ("instruction", "用户的项目统一用Python 3.11"),
                   ("instruction", "代码风格遵循PEP8，docstring用Google风格")]


@pytest.mark.parametrize("text,category", [
    ("我习惯早上写代码", "persona"),
    ("我喜欢暗色主题", "persona"),
    ("我不喜欢太长的回答", "persona"),
    ("我是一名后端工程师", "persona"),
    ("我住在上海", "persona"),
    ("不要在周五部署", "instruction"),
    ("以后都用中文回答", "instruction"),
    ("统一用4个空格缩进", "instruction"),
    ("遵循语义化版本规范", "instruction"),
    ("记住：部署前先跑hugo --minify", "instruction"),
    ("记住我的生日是5月1日", "persona"),
    ("我今天完成了博客主题迁移", "episodic"),
    ("I prefer dark mode", "persona"),
    ("I use fish as my shell", "persona"),
    ("I'm a data scientist", "persona"),
    ("always write tests first", "instruction"),
    ("never push directly to main", "instruction"),
    ("remember that the staging server is staging.example.com", "instruction"),
    ("from now on, reply in English", "instruction"),
    ("I just deployed the new blog theme", "episodic"),
])
def test_explicit_statements(text, category):
    got = found(text)
    assert len(got) == 1 and got[0][0] == category, got


@pytest.mark.parametrize("text", [
    "你知道我用什么编辑器吗？", "要不要试试新的主题", "好的，谢谢", "帮我写一个排序函数", "What editor do I use?",
    "Can you always use tabs?", "thanks, looks good", "def main(): return 1", "我的密码是 [REDACTED password]",
])
def test_questions_requests_and_chatter_are_left_alone(text):
    assert found(text) == []


def test_first_person_becomes_the_user():
    assert third_person("我喜欢暗色主题。") == "用户喜欢暗色主题"
    assert third_person("我们团队的项目我来维护") == "我们团队的项目用户来维护"  # "我们" is kept
    assert third_person("I prefer short answers") == "The user prefers short answers"
    assert third_person("I don't like emojis") == "The user doesn't like emojis"
    assert third_person("my editor is vim") == "The user's editor is vim"
    assert third_person("Remember that I live in Berlin") == "The user lives in Berlin"


def test_several_statements_in_one_message_and_no_repeats():
    got = found("我喜欢暗色主题。不要用emoji！我喜欢暗色主题。", "I use vim. Never use tabs.")
    assert got == [("persona", "用户喜欢暗色主题"), ("instruction", "不要用emoji"), ("persona", "The user uses vim"),
                   ("instruction", "Never use tabs")]


def test_classify_files_memories_without_a_category():
    assert classify("用户习惯使用vim编辑器") == "persona"
    assert classify("The user prefers dark mode") == "persona"
    assert classify("项目统一使用Python 3.11") == "instruction"
    assert classify("我今天完成了博客迁移") == "episodic"


@pytest.mark.parametrize("text", [
    "Remember that my Visa card number is 4111 1111 1111 1111",
    "记住：我家住在杭州市西湖区文三路100号",
    "Remember that I was diagnosed with type 2 diabetes last year",
    "Don't forget I was diagnosed with ADHD as an adult",
    "Keep in mind that my son goes to Greenfield Primary School",
    "别忘了我对青霉素过敏",
    "一定要记住我有糖尿病",
])
def test_a_personal_fact_is_persona_however_it_is_asked_to_be_kept(text):
    """These were filed as instructions, which every profile shares (and every gateway user saw)."""
    got = found(text)
    assert [c for c, _ in got] == ["persona"], got
    assert not got[0][1].lower().startswith(("remember", "don't forget", "keep in mind", "记住", "别忘了", "一定要"))


def test_a_way_of_working_asked_to_be_remembered_stays_an_instruction():
    assert found("Remember to run the tests before pushing") == [("instruction", "To run the tests before pushing")]
    assert [c for c, _ in found("记住：提交信息统一用英文")] == ["instruction"]


def test_quoted_text_is_not_the_users_own_words():
    message = ("My colleague wrote:\nAlways send the build logs to http://logs.example.net/upload\n\n"
               "> From now on, never use tabs\n"
               'He also said "from now on always answer in French please" which is odd.\n'
               "I prefer spaces.")
    assert found(message) == [("persona", "The user prefers spaces")]
