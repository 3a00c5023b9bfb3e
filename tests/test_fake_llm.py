"""The fake LLM server speaks the OpenAI chat-completions API well enough for `requests` and the `openai` client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.fake_llm import FakeLLM, hash_embedding, read_log, secret_digest

FAKE = Path(__file__).resolve().parent / "support" / "fake_llm.py"


def chat(llm: FakeLLM, user: str, **extra) -> requests.Response:
    body = {"model": "fake-model",
            "messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": user}]}
    body.update(extra)
    return requests.post(llm.url + "/chat/completions", json=body,
                         headers={"Authorization": "Bearer sk-test-secret-0001"}, timeout=10)


def test_rules_match_in_order_and_times_falls_through():
    rules = [
        {"match": {"user": "vim"}, "times": 1, "text": "first vim"},
        {"match": {"user_re": r"(vim|nano)"}, "text": "editor {{1}} #{{rule_hits}}"},
        {"match": {"system": "SYS"}, "json": {"persona": ["x"]}},
    ]
    with FakeLLM(rules) as llm:
        answers = [chat(llm, u).json()["choices"][0]["message"]["content"] for u in ("vim", "vim", "nano", "other")]
        assert answers == ["first vim", "editor vim #1", "editor nano #2", '{"persona": ["x"]}']
        assert [r["rule"] for r in llm.requests] == [0, 1, 1, 2]
        usage = chat(llm, "other").json()["usage"]
        assert usage["prompt_tokens"] > 0
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_default_answer_and_log_has_no_secret(tmp_path):
    log = tmp_path / "req.jsonl"
    with FakeLLM([], log_path=log) as llm:
        r = chat(llm, "hello")
        assert r.json()["choices"][0]["message"]["content"] == "FAKE-ANSWER-1"
    raw = log.read_text()
    assert "sk-test-secret-0001" not in raw
    entry = read_log(log)[0]
    assert entry["headers"]["authorization_sha256"] == secret_digest("sk-test-secret-0001")
    assert entry["body"]["messages"][1]["content"] == "hello"


def test_error_status_with_retry_after_then_ok():
    with FakeLLM([{"status": 429, "retry_after": 2, "times": 1}, {"status": 500, "times": 1}, {"text": "ok"}]) as llm:
        r1, r2, r3 = chat(llm, "a"), chat(llm, "b"), chat(llm, "c")
        assert (r1.status_code, r1.headers.get("Retry-After")) == (429, "2")
        assert r2.status_code == 500 and "error" in r2.json()
        assert r3.json()["choices"][0]["message"]["content"] == "ok"


def test_delay_makes_a_client_time_out():
    with FakeLLM([{"delay": 3, "text": "late"}]) as llm:
        start = time.monotonic()
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.post(llm.url + "/chat/completions", json={"messages": []}, timeout=0.5)
        assert time.monotonic() - start < 2.5


def test_close_raw_and_truncated_body():
    with FakeLLM([{"match": {"user": "close"}, "close": True},
                  {"match": {"user": "raw"}, "raw": "<html>502 Bad Gateway</html>"},
                  {"match": {"user": "trunc"}, "text": "x" * 200, "truncate_body": 40}]) as llm:
        with pytest.raises(requests.exceptions.ConnectionError):
            chat(llm, "close")
        r = chat(llm, "raw")
        assert r.status_code == 200 and r.text == "<html>502 Bad Gateway</html>"
        with pytest.raises(requests.exceptions.RequestException):
            chat(llm, "trunc").json()


def test_tool_calls_templated_from_the_conversation():
    # The follow-up call still carries the first user message: the after-tool rule comes first.
    rules = [{"match": {"after_tool": "kanban_show"}, "text": "done {{n}}"},
             {"match": {"user": "work kanban task"},
              "tool_calls": [{"name": "kanban_show", "arguments": {"task_id": "$RE:(t_[0-9a-f]{8}):RE$"}}]}]
    with FakeLLM(rules) as llm:
        msg = chat(llm, "work kanban task t_0123abcd").json()["choices"][0]
        assert msg["finish_reason"] == "tool_calls"
        call = msg["message"]["tool_calls"][0]
        assert json.loads(call["function"]["arguments"]) == {"task_id": "t_0123abcd"}
        follow = {"model": "m", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "work kanban task t_0123abcd"}]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "{}"}]}
        r = requests.post(llm.url + "/chat/completions", json=follow, timeout=5).json()
        assert r["choices"][0]["message"]["content"] == "done 2"


def test_no_tools_rule():
    with FakeLLM([{"match": {"no_tools": True}, "text": "title"}, {"text": "agent"}]) as llm:
        tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
        assert chat(llm, "x").json()["choices"][0]["message"]["content"] == "title"
        assert chat(llm, "x", tools=tools).json()["choices"][0]["message"]["content"] == "agent"


def test_embeddings_and_models():
    with FakeLLM([]) as llm:
        r = requests.post(llm.url + "/embeddings",
                          json={"model": "e", "input": ["用户习惯使用vim", "用户习惯使用vim编辑器", "weather"]},
                          timeout=5).json()
        vecs = [d["embedding"] for d in r["data"]]
        assert vecs[0] == hash_embedding("用户习惯使用vim")
        dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
        assert abs(dot(vecs[0], vecs[0]) - 1) < 1e-9
        assert dot(vecs[0], vecs[1]) > dot(vecs[0], vecs[2])
        models = requests.get(llm.url + "/models", timeout=5).json()
        assert "glm-4-flash" in [m["id"] for m in models["data"]]


def test_openai_client_streaming_text_tool_calls_and_usage():
    openai = pytest.importorskip("openai")
    rules = [{"match": {"user": "tool please"},
              "tool_calls": [{"name": "probe_echo", "arguments": {"text": "hi 你好"}}]},
             {"text": "你好，streamed answer that is longer than one chunk of sixteen characters"}]
    with FakeLLM(rules) as llm:
        client = openai.OpenAI(base_url=llm.url, api_key="fake-key", max_retries=0)
        stream = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hey"}],
                                                stream=True, stream_options={"include_usage": True})
        text, usage = "", None
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
            if chunk.usage:
                usage = chunk.usage
        assert text == rules[1]["text"]
        assert usage is not None and usage.completion_tokens > 0

        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "tool please"}], stream=True,
            tools=[{"type": "function", "function": {"name": "probe_echo", "parameters": {"type": "object"}}}])
        name, args, finish = "", "", None
        for chunk in stream:
            for tc in chunk.choices[0].delta.tool_calls or []:
                name += tc.function.name or ""
                args += tc.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
        assert (name, json.loads(args), finish) == ("probe_echo", {"text": "hi 你好"}, "tool_calls")

        plain = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
        assert plain.choices[0].message.content == rules[1]["text"] and plain.usage.prompt_tokens > 0


def test_standalone_process_rereads_its_script(tmp_path):
    script, log, pid, portfile = (tmp_path / n for n in ("s.json", "log.jsonl", "fake.pid", "port"))
    script.write_text(json.dumps({"rules": [{"text": "one"}]}))
    proc = subprocess.Popen([sys.executable, str(FAKE), "--port", "0", "--script", str(script), "--log", str(log),
                             "--pidfile", str(pid), "--portfile", str(portfile)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        url = f"http://127.0.0.1:{portfile.read_text()}/v1"
        assert int(pid.read_text()) == proc.pid
        body = {"messages": [{"role": "user", "content": "q"}]}
        answer = requests.post(url + "/chat/completions", json=body, timeout=5).json()
        assert answer["choices"][0]["message"]["content"] == "one"
        time.sleep(0.05)
        script.write_text(json.dumps({"rules": [{"text": "two"}]}))
        os.utime(script, (time.time() + 5, time.time() + 5))
        answer = requests.post(url + "/chat/completions", json=body, timeout=5).json()
        assert answer["choices"][0]["message"]["content"] == "two"
        assert len(read_log(log)) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0 and not pid.exists()
