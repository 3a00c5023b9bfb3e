"""Tolerant parsing of the model's answer: one test per case the issue lists, and the unusable ones."""

from __future__ import annotations

import pytest

from automem.errors import LLMError
from automem.extract.parse import ParseError, parse_extraction, parse_judge, read_json
from automem.extract.rules import classify

SEED = '{"persona":["用户习惯使用vim编辑器"],"episodic":[],"instruction":["项目统一使用Python 3.11"]}'


def pairs(result):
    return [(i.category, i.text) for i in result.items]


def test_plain_json():
    r = parse_extraction(SEED)
    assert pairs(r) == [("persona", "用户习惯使用vim编辑器"), ("instruction", "项目统一使用Python 3.11")]
    assert not r.truncated and r.notes == []


def test_json_inside_code_fences():
    r = parse_extraction("```json\n" + SEED + "\n```")
    assert len(r.items) == 2
    r = parse_extraction("Here you go:\n```\n" + SEED + "\n```\nHope this helps.")
    assert len(r.items) == 2


def test_json_surrounded_by_text():
    r = parse_extraction("好的，提取结果如下：" + SEED + "\n以上是全部内容。")
    assert len(r.items) == 2


def test_prose_with_braces_before_the_answer():
    r = parse_extraction("The format is {persona, episodic, instruction}. Answer: " + SEED)
    assert len(r.items) == 2


def test_think_blocks_are_ignored():
    r = parse_extraction('<think>用户说了 {"persona": ["不是这个"]} 吗？</think>\n' + SEED)
    assert ("persona", "不是这个") not in pairs(r) and len(r.items) == 2


def test_unclosed_think_is_unusable():
    with pytest.raises(ParseError, match="think"):
        parse_extraction("<think>让我想想……用户习惯")


def test_objects_where_strings_were_asked_for():
    r = parse_extraction('{"persona": [{"content": "用户喜欢暗色主题"}, {"text": "用户住在上海"}],'
                         ' "instruction": [{"memory": "部署前先跑测试", "category": "instruction"}]}')
    assert pairs(r) == [("persona", "用户喜欢暗色主题"), ("persona", "用户住在上海"),
                        ("instruction", "部署前先跑测试")]


def test_unknown_keys_are_named_and_aliases_understood():
    r = parse_extraction('{"preferences": ["用户喜欢暗色主题"], "rules": ["提交前先运行测试"], "mood": ["happy"]}')
    assert pairs(r) == [("persona", "用户喜欢暗色主题"), ("instruction", "提交前先运行测试")]
    assert any("mood" in n for n in r.notes)


def test_missing_keys_are_empty():
    assert pairs(parse_extraction('{"instruction": ["代码风格遵循PEP8"]}')) == [("instruction", "代码风格遵循PEP8")]


def test_braces_and_quotes_inside_strings():
    r = parse_extraction(r'{"instruction": ["配置写成 {\"a\": 1} 的形式", "函数用 f(x) { return x; } 风格"]}')
    assert [t for _, t in pairs(r)] == ['配置写成 {"a": 1} 的形式', "函数用 f(x) { return x; } 风格"]


def test_trailing_commas():
    r = parse_extraction('{"persona": ["用户习惯使用vim编辑器",], "episodic": [], '
                         '"instruction": ["项目用Python 3.11",],}')
    assert len(r.items) == 2


def test_truncated_output_keeps_the_complete_items():
    cut = ('{"persona": ["用户习惯使用vim编辑器", "用户喜欢暗色主题"], '
           '"instruction": ["项目统一使用Python 3.11", "代码风格遵')
    r = parse_extraction(cut)
    assert pairs(r) == [("persona", "用户习惯使用vim编辑器"), ("persona", "用户喜欢暗色主题"),
                        ("instruction", "项目统一使用Python 3.11")]
    assert r.truncated and any("cut off" in n for n in r.notes)


def test_finish_reason_length_marks_truncation():
    assert parse_extraction(SEED, finish_reason="length").truncated


def test_truncated_before_the_first_item_is_unusable():
    with pytest.raises(ParseError, match="cut off"):
        parse_extraction('{"persona": ["用户习惯使')


@pytest.mark.parametrize("answer", ["", "无", "没有。", "null", "None", "{}", "[]", "```json\n{}\n```", None,
                                    '{"persona": [], "episodic": [], "instruction": []}', "<think>nothing</think>无"])
def test_empty_answers(answer):
    r = parse_extraction(answer)
    assert r.items == []


def test_garbage_is_unusable_and_retryable():
    with pytest.raises(ParseError) as err:
        parse_extraction("I'm sorry, I can't help with that.")
    assert isinstance(err.value, LLMError) and err.value.retryable


def test_json_without_any_memory_keys_is_unusable():
    with pytest.raises(ParseError):
        parse_extraction('{"answer": "vim"}')


def test_the_prompts_placeholders_are_not_memories():
    r = parse_extraction('{"persona":["字符串1","字符串2"],"episodic":["字符串1"],"instruction":["用户要求先写测试"]}')
    assert pairs(r) == [("instruction", "用户要求先写测试")]
    assert sum("placeholder" in n for n in r.notes) == 3


def test_a_single_string_instead_of_a_list_and_duplicates():
    r = parse_extraction('{"persona": "用户习惯使用vim编辑器", "instruction": ["a rule here", "a rule here"]}')
    assert pairs(r) == [("persona", "用户习惯使用vim编辑器"), ("instruction", "a rule here")]


def test_a_list_of_tagged_objects_and_a_container_key():
    r = parse_extraction('{"memories": [{"type": "persona", "content": "用户习惯使用vim"},'
                         ' {"category": "episodic", "text": "完成了博客迁移"}]}')
    assert pairs(r) == [("persona", "用户习惯使用vim"), ("episodic", "完成了博客迁移")]


def test_a_bare_list_of_strings_is_classified():
    r = parse_extraction('["我习惯用vim编辑器", "以后都用中文回答"]', classify=classify)
    assert pairs(r) == [("persona", "我习惯用vim编辑器"), ("instruction", "以后都用中文回答")]


def test_non_string_items_are_named():
    r = parse_extraction('{"persona": ["用户习惯使用vim编辑器", ["nested"], true]}')
    assert pairs(r) == [("persona", "用户习惯使用vim编辑器")]
    assert len(r.notes) == 2


def test_single_quotes_and_full_width_colon():
    r = parse_extraction("{'persona'： ['用户喜欢暗色主题']}")
    assert pairs(r) == [("persona", "用户喜欢暗色主题")]


def test_read_json_reports_completeness():
    assert read_json('{"a": [1, 2]}') == ({"a": [1, 2]}, True)
    assert read_json('{"a": [1, 2') == ({"a": [1]}, False)  # the last number may be cut
    with pytest.raises(ValueError):
        read_json('"never closed')


def test_judge_answers():
    assert parse_judge('["duplicate", "update", "NEW"]', 3) == ["duplicate", "update", "new"]
    assert parse_judge('```json\n["duplicate"]\n```', 2) == ["duplicate", ""]
    assert parse_judge('[{"decision": "update"}, "maybe"]', 2) == ["update", ""]
    with pytest.raises(ParseError):
        parse_judge("no idea", 1)
