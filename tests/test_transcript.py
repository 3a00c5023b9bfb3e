"""Transcript preparation: the seed's rules, recalled context dropped, secrets redacted."""

from __future__ import annotations

import pytest

from automem.extract.transcript import Transcript, prepare, read_transcript_file, strip_injected
from automem.text import RECALL_MARKER, recall_block

HERMES_FENCE = ("<memory-context>\n[System note: The following is recalled memory context, NOT new user input. "
                "Treat as authoritative reference data — this is the agent's persistent memory and should inform "
                "all responses.]\n\n[automem:recall]\n- 用户习惯使用vim编辑器\n</memory-context>")


def msgs(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


def test_user_and_assistant_only_with_the_seed_prefixes():
    t = prepare(msgs(("system", "SYSTEM PROMPT"), ("user", "我习惯用vim"), ("tool", "tool output"),
                     ("assistant", "好的"), ("assistant", None)))
    assert t.messages == [("user", "我习惯用vim"), ("assistant", "好的")]
    assert t.text == "用户：我习惯用vim\n助手：好的"


def test_fewer_than_two_messages_is_nothing():
    assert prepare(msgs(("user", "hello"))) is None
    assert prepare(msgs(("user", "hello"), ("assistant", "   "))) is None
    assert prepare([]) is None


def test_content_given_as_a_list_of_parts():
    t = prepare([{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image_url",
                                                                                       "image_url": {"url": "x"}},
                                               {"type": "text", "text": "part two"}]},
                 {"role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}])
    assert t.messages == [("user", "part one\npart two"), ("assistant", "ok")]


def test_each_message_cut_to_500_and_the_whole_to_its_last_4000():
    long = [("user" if i % 2 == 0 else "assistant", f"{i:03d}" + "x" * 900) for i in range(20)]
    t = prepare(msgs(*long))
    assert all(len(text) <= 500 for _, text in t.messages)
    assert len(t.text) <= 4000
    assert t.messages[-1][1].startswith("019")  # the newest messages are kept
    assert len(t.text) > 3900  # the budget is used, the oldest kept message cut at its front


def test_limits_are_configurable():
    both = msgs(("user", "a" * 50), ("assistant", "b" * 50))
    assert prepare(both, message_chars=10, max_chars=40).text == "用户：" + "a" * 10 + "\n助手：" + "b" * 10
    assert prepare(both, message_chars=10, max_chars=20).text == "用户：aaa\n助手：" + "b" * 10
    assert prepare(both, min_messages=3) is None


def test_hermes_memory_context_and_system_note_dropped():
    t = prepare(msgs(("user", "你知道我用什么编辑器吗？\n\n" + HERMES_FENCE), ("assistant", "你用vim")))
    assert t.messages[0] == ("user", "你知道我用什么编辑器吗？")
    assert "System note" not in t.text and "vim编辑器" not in t.text


def test_automem_blocks_dropped_wherever_they_are():
    recall = pytest.importorskip("automem.core.recall")  # the recall code prints the marker this module strips
    block = recall.format_prefetch([recall.RecallItem("m_1", "项目统一使用Python 3.11", "instruction", "default")],
                                   "default")
    assert block.startswith(RECALL_MARKER)
    assert strip_injected("今天天气不错\n\n" + block) == "今天天气不错"
    assert strip_injected("前 " + recall_block("- 旧记忆") + " 后") == "前  后"
    t = prepare(msgs(("user", "hi\n\n" + block), ("assistant", "hello " + recall_block("x"))))
    assert "Python 3.11" not in t.text and t.messages == [("user", "hi"), ("assistant", "hello")]


def test_unterminated_memory_context_dropped_to_the_end():
    assert strip_injected("keep this <memory-context>\n[System note: x]\nrecalled stuff") == "keep this"


def test_compaction_summaries_are_system_text():
    t = prepare(msgs(("user", "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted ..."),
                     ("user", "我习惯用vim"), ("assistant", "好的")))
    assert t.messages == [("user", "我习惯用vim"), ("assistant", "好的")]


def test_secrets_redacted_before_cutting():
    key = "sk-" + "A1b2C3d4" * 4
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    t = prepare(msgs(("user", f"my key is {key} and the password is hunter22"), ("assistant", pem),
                     ("user", "x" * 490 + " " + key)))
    assert key not in t.text and "hunter22" not in t.text and "b3BlbnNzaC1rZXktdjEAAAAA" not in t.text
    assert key[:12] not in t.text  # a key cut at 500 characters does not leave its start behind
    assert "[REDACTED API key]" in t.text and "[REDACTED private key]" in t.text


def test_digest_and_json_round_trip():
    t = prepare(msgs(("user", "a b c d e"), ("assistant", "f g")))
    again = Transcript.from_json(t.to_json())
    assert again == t and again.digest() == t.digest()
    other = prepare(msgs(("user", "a b c d e"), ("assistant", "f g h")))
    assert other.digest() != t.digest()


def test_read_transcript_file_formats():
    as_list = '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]'
    as_obj = '{"messages": [{"role": "user", "content": "a"}]}'
    as_jsonl = '{"role": "user", "content": "a"}\n\n{"role": "assistant", "content": "b"}\n'
    assert len(read_transcript_file(as_list)) == 2
    assert len(read_transcript_file(as_obj)) == 1
    assert [m["role"] for m in read_transcript_file(as_jsonl)] == ["user", "assistant"]
    for bad in ("", "not json\n", "[1, 2]", '{"x": 1}'):
        with pytest.raises(ValueError):
            read_transcript_file(bad)
