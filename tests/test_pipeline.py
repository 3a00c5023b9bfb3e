"""The extraction pipeline against a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API.

Backends first (no store), then the whole pipeline on a real ChromaDB in a temporary folder: the seed's checks 1
and 2, a changed fact superseding the old one, the offline rules backend without any network, recalled context
and secrets kept out, and the `automem extract` command.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from automem.config import Config
from automem.errors import LLMError
from automem.extract.llm import (
    Completion,
    HermesBackend,
    OpenAIBackend,
    RulesBackend,
    choose_backend,
    parse_retry_after,
    register_host_llm,
)
from automem.extract.prompt import EXTRACTION_SYSTEM_PROMPT, KNOWN_HEADER, SEED_EXTRACTION_SYSTEM_PROMPT
from automem.paths import Location
from automem.text import normalise
from tests.support.fake_llm import FakeLLM, secret_digest
from tests.support.seed import SEED_ANSWER, SEED_CHAT

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "data" / "sample_conversation.json"

REWORDED_CHAT = [
    {"role": "user", "content": "提醒一下，我一直用vim写代码，nano就别推荐了"},
    {"role": "assistant", "content": "好的。"},
    {"role": "user", "content": "我们的项目都用Python 3.11版本"},
    {"role": "assistant", "content": "收到。"},
    {"role": "user", "content": "代码要符合PEP8规范，文档字符串采用Google风格"},
    {"role": "assistant", "content": "明白。"},
]
REWORDED_ANSWER = {"persona": ["用户一直使用vim编辑器写代码"], "episodic": [],
                   "instruction": ["项目都使用Python 3.11版本", "代码要符合PEP8规范，文档字符串采用Google风格"]}
# The judge settles borderline pairs: a restatement is a duplicate, a changed version an update.
JUDGE_RULE = {"match": {"system": "记忆去重助手", "user_re": r"3\.12"}, "json": ["update"]}
JUDGE_DUP_RULE = {"match": {"system": "记忆去重助手"}, "text": '["duplicate","duplicate","duplicate"]'}


def llm_config(url: str, **extra) -> Config:
    cfg = Config(extract_backend="openai", extract_base_url=url, extract_api_key="test-key-123",
                 extract_timeout=5.0, spool_backoff_seconds=0.05, spool_backoff_max_seconds=1.0)
    for k, v in extra.items():
        setattr(cfg, k, v)
    return cfg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- backends -------------------------------------------------------------------------------------------------
def test_openai_backend_sends_the_seed_request():
    with FakeLLM([{"json": SEED_ANSWER}]) as llm:
        cfg = Config(extract_base_url=llm.url, extract_api_key="k-abc-123")
        out = OpenAIBackend(cfg).complete([{"role": "user", "content": "hi"}])
        body = llm.requests[0]["body"]
        assert (body["model"], body["temperature"], body["max_tokens"], body["stream"]) == \
            ("glm-4-flash", 0.1, 800, False)
        assert llm.requests[0]["headers"]["authorization_sha256"] == secret_digest("k-abc-123")
        assert json.loads(out.text) == SEED_ANSWER
        assert out.prompt_tokens > 0 and out.completion_tokens > 0 and out.latency_ms > 0


def test_openai_backend_defaults_to_zhipu_and_glm_api_key(monkeypatch):
    monkeypatch.setenv("GLM_API_KEY", "from-env-key")
    backend = OpenAIBackend(Config())
    assert backend.url == "https://open.bigmodel.cn/api/paas/v4/chat/completions"
    assert backend.api_key == "from-env-key" and backend.model == "glm-4-flash"
    assert Config().extract_timeout == 30.0


@pytest.mark.parametrize("rule,retryable,words", [
    ({"status": 401}, False, "extract_api_key"),
    ({"status": 403}, False, "rejected the key"),
    ({"status": 404}, False, "extract_base_url"),
    ({"status": 400, "error": "bad model"}, False, "refused"),
    ({"status": 429, "retry_after": 7}, True, "rate limiting"),
    ({"status": 503}, True, "HTTP 503"),
    ({"raw": "<html>oops</html>"}, True, "not JSON"),
    ({"raw": '{"id": "x", "choices": []}'}, True, "without a message"),
    ({"text": "x" * 300, "truncate_body": 50}, True, "extraction API"),
    ({"close": True}, True, "extraction API"),
])
def test_openai_backend_classifies_failures(rule, retryable, words):
    with FakeLLM([rule]) as llm:
        with pytest.raises(LLMError) as err:
            OpenAIBackend(llm_config(llm.url)).complete([{"role": "user", "content": "x"}])
    assert err.value.retryable is retryable and words in str(err.value)
    assert "\n" not in str(err.value)
    if rule.get("status") == 429:
        assert err.value.retry_after == 7.0


def test_openai_backend_timeout_and_server_down():
    with FakeLLM([{"delay": 3, "text": "late"}]) as llm:
        with pytest.raises(LLMError, match="within 0.3 s") as err:
            OpenAIBackend(llm_config(llm.url, extract_timeout=0.3)).complete([])
        assert err.value.retryable
    with pytest.raises(LLMError, match="cannot reach") as err:
        OpenAIBackend(llm_config(f"http://127.0.0.1:{free_port()}/v1")).complete([])
    assert err.value.retryable


def test_openai_backend_without_a_key_is_a_config_error():
    with pytest.raises(LLMError, match="GLM_API_KEY") as err:
        OpenAIBackend(Config(extract_api_key="")).complete([])
    assert not err.value.retryable


def test_retry_after_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert 9 <= parse_retry_after("Wed, 02 Dec 2026 13:00:10 GMT", now=1796216400.0) <= 10


def test_choose_backend(tmp_path, monkeypatch):
    loc = Location(tmp_path, "default")
    assert choose_backend(Config(extract_api_key="k"), loc).name == "openai"
    assert choose_backend(Config(), loc, origin="cli").name == "rules"
    assert choose_backend(Config(extract_backend="rules", extract_api_key="k"), loc).name == "rules"
    assert choose_backend(Config(extract_backend="hermes"), loc).name == "hermes"
    register_host_llm("default", lambda messages, **kw: "{}")
    try:
        assert choose_backend(Config(), loc, origin="hermes").name == "hermes"
    finally:
        register_host_llm("default", None)
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "elsewhere"))
    assert choose_backend(Config(), loc, origin="hermes").name == "rules"  # another profile's process
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert choose_backend(Config(), loc, origin="hermes").name == "hermes"  # Hermes is importable here


def test_hermes_backend_with_an_injected_host_call(tmp_path):
    class Usage:
        input_tokens, output_tokens = 120, 30

    class Result:
        text, usage, model = json.dumps(SEED_ANSWER, ensure_ascii=False), Usage(), "host-model"

    seen = {}

    def host(messages, **kw):
        seen.update(kw, messages=messages)
        return Result()

    out = HermesBackend(Config(), Location(tmp_path, "default"), host).complete([{"role": "user", "content": "x"}])
    assert (out.prompt_tokens, out.completion_tokens, out.model) == (120, 30, "host-model")
    assert seen["temperature"] == 0.1 and seen["max_tokens"] == 800 and seen["timeout"] == 30.0

    class Denied(Exception):
        status_code = 401

    def denied(messages, **kw):
        raise Denied("no")

    with pytest.raises(LLMError) as err:
        HermesBackend(Config(), Location(tmp_path, "default"), denied).complete([])
    assert not err.value.retryable


def test_hermes_backend_through_the_real_plugin_facade(tmp_path):
    """The detached drainer's path: Hermes' own interpreter, agent.plugin_llm imported lazily, HERMES_HOME set."""
    pytest.importorskip("agent.plugin_llm")
    home = tmp_path / "hermes"
    home.mkdir()
    with FakeLLM([{"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}]) as llm:
        (home / "config.yaml").write_text(textwrap.dedent(f"""\
            model:
              provider: custom
              default: fake-model
              base_url: {llm.url}
              api_key: fake-host-key
            """))
        code = textwrap.dedent("""\
            import json, os
            from automem.config import Config
            from automem.extract.llm import HermesBackend
            from automem.paths import Location
            assert "HERMES_HOME" not in os.environ
            out = HermesBackend(Config(), Location.resolve(os.environ["ROOT"])).complete(
                [{"role": "system", "content": "你是一个记忆提取助手。"}, {"role": "user", "content": "用户：hi"}])
            print(json.dumps({"text": out.text, "prompt": out.prompt_tokens, "home": os.environ["HERMES_HOME"]}))
            """)
        env = {k: v for k, v in os.environ.items() if k != "HERMES_HOME"}
        env.update(ROOT=str(home), HOME=str(tmp_path / "fakehome"), PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert json.loads(out["text"]) == SEED_ANSWER and out["home"] == str(home)
        chat = llm.chat_requests()
        assert chat and chat[-1]["headers"]["authorization_sha256"] == secret_digest("fake-host-key")
        assert chat[-1]["body"]["messages"][0]["content"].startswith("你是一个记忆提取助手")


# -- the prompt ----------------------------------------------------------------------------------------------
def test_prompt_is_the_seeds_plus_the_language_and_turn_rules():
    assert EXTRACTION_SYSTEM_PROMPT.startswith(SEED_EXTRACTION_SYSTEM_PROMPT)
    assert "6. 偏好类信息归persona，不要归episodic\n7. " in EXTRACTION_SYSTEM_PROMPT
    assert "language the user wrote in" in EXTRACTION_SYSTEM_PROMPT
    assert EXTRACTION_SYSTEM_PROMPT.endswith('\n8. 每条记忆以出处的行号开头，如"[3]项目统一使用Python 3.11"')


def test_known_block_budget():
    from automem.extract.prompt import known_context, system_prompt

    items = [f"记忆{i:02d}" + "x" * 30 for i in range(30)]
    known = known_context(items, max_items=15, max_chars=500)
    parts = known.split("；")
    assert len(parts) <= 15 and len(known) <= 500 and parts == items[:len(parts)]
    assert known_context(items, max_items=3) == "；".join(items[:3])
    assert known_context(["a" * 800], max_chars=500) == "a" * 100  # each memory at most 100 characters, as the seed
    assert system_prompt("x；y").endswith(f"\n\n{KNOWN_HEADER}\nx；y")
    assert system_prompt("") == EXTRACTION_SYSTEM_PROMPT


# -- the pipeline on a real store -----------------------------------------------------------------------------
@pytest.fixture
def pipeline_env(location):
    """(location, store opener) on a fresh root; the store is shared by the tests' calls to keep them fast."""
    from automem.core.store import Store

    stores = []

    def open_store(cfg):
        s = Store(location, cfg)
        stores.append(s)
        return s

    yield location, open_store
    for s in stores:
        s.close()


def active_texts(store, wing=None):
    return sorted(m.text for m in store.list(profile="default", wing=wing))


def run(location, store, cfg, messages, session="s1"):
    from automem.extract.pipeline import extract_now

    return extract_now(location, messages, config=cfg, session_id=session, store=store)


def test_seed_check_1_and_2(pipeline_env):
    location, open_store = pipeline_env
    rules = [JUDGE_DUP_RULE,
             {"match": {"user": "一直用vim"}, "json": REWORDED_ANSWER},
             {"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}]
    with FakeLLM(rules) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        first = run(location, store, cfg, SEED_CHAT, "s1")
        assert first.status == "done"
        assert [d["decision"] for d in first.decisions] == ["new", "new", "new"]
        assert active_texts(store, "user") == ["用户习惯使用vim编辑器"]
        assert active_texts(store, "instruction") == [normalise("代码风格遵循PEP8，docstring用Google风格"),
                                                      "项目统一使用Python 3.11"]
        mems = store.list(profile="default")
        assert {m.room for m in mems} == {"auto-extract"} and {m.session_id for m in mems} == {"s1"}
        assert {m.category for m in mems} == {"persona", "instruction"}

        request = llm.chat_requests()[0]["body"]
        assert request["messages"][0]["content"] == EXTRACTION_SYSTEM_PROMPT  # nothing known yet
        assert request["messages"][1]["content"].startswith("[1]用户：我习惯用vim编辑器")  # turns numbered

        # check 2: the same conversation in a new session stores nothing new; P2 told the model what it knows
        second = run(location, store, cfg, SEED_CHAT, "s2")
        assert [d["decision"] for d in second.decisions] == ["duplicate"] * 3
        system = llm.chat_requests()[1]["body"]["messages"][0]["content"]
        assert KNOWN_HEADER in system and "用户习惯使用vim编辑器" in system and "项目统一使用Python 3.11" in system

        # ... and neither does a reworded version of it
        third = run(location, store, cfg, REWORDED_CHAT, "s3")
        assert third.status == "done", third.error
        assert [d["decision"] for d in third.decisions] == ["duplicate"] * 3, third.decisions
        assert len(store.list(profile="default")) == 3


def test_a_changed_fact_supersedes_the_old_one(pipeline_env):
    location, open_store = pipeline_env
    rules = [JUDGE_RULE,
             {"match": {"user": "改用Python 3.12"}, "json": {"instruction": ["项目改用Python 3.12"]}},
             {"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}]
    with FakeLLM(rules) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        assert run(location, store, cfg, SEED_CHAT).status == "done"
        changed = [{"role": "user", "content": "项目改用Python 3.12了"}, {"role": "assistant", "content": "好的"}]
        result = run(location, store, cfg, changed, "s2")
        assert [d["decision"] for d in result.decisions] == ["update"], result.decisions
        old = [m for m in store.list(profile="default", include_hidden=True) if m.text == "项目统一使用Python 3.11"][0]
        assert old.status == "superseded" and old.superseded_by == result.decisions[0]["id"]
        assert "项目改用Python 3.12" in active_texts(store, "instruction")
        assert "项目统一使用Python 3.11" not in active_texts(store, "instruction")


def test_rules_backend_yields_the_seed_memories(pipeline_env):
    location, open_store = pipeline_env
    cfg = Config(extract_backend="auto")  # no key, from the CLI: the offline rules
    store = open_store(cfg)
    result = run(location, store, cfg, SEED_CHAT)
    assert result.status == "done" and result.details["backend"] == "rules"
    assert result.details["prompt_tokens"] == 0
    texts = " ".join(active_texts(store))
    assert "vim" in texts and "Python 3.11" in texts and "PEP8" in texts
    assert [m.wing for m in store.list(profile="default") if "vim" in m.text] == ["user"]
    again = run(location, store, cfg, SEED_CHAT)
    assert {d["decision"] for d in again.decisions} == {"duplicate"}


def test_recalled_context_is_not_extracted_again(pipeline_env):
    from automem.text import recall_block

    location, open_store = pipeline_env
    recalled = ("<memory-context>\n[System note: The following is recalled memory context, NOT new user input. "
                "Treat as authoritative reference data — this is the agent's persistent memory.]\n\n"
                "[automem:recall]\n- [persona] 用户习惯使用vim编辑器\n</memory-context>")
    chat = [{"role": "user", "content": "你知道我用什么编辑器吗？\n\n" + recalled},
            {"role": "assistant", "content": "你用vim。"},
            {"role": "user",
             "content": "帮我看看这段代码\n\n" + recall_block("- [instruction] 项目统一使用Python 3.11")},
            {"role": "assistant", "content": "好的。"}]
    nothing = {"persona": [], "episodic": [], "instruction": []}
    with FakeLLM([{"match": {"system": "记忆提取助手"}, "json": nothing}]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        result = run(location, store, cfg, chat)
        assert result.status == "done" and result.decisions == []
        sent = llm.chat_requests()[0]["body"]["messages"][1]["content"]
        assert "vim编辑器" not in sent and "Python 3.11" not in sent and "System note" not in sent
        assert "你知道我用什么编辑器吗？" in sent
    cfg = Config(extract_backend="rules")
    assert run(location, store, cfg, chat).decisions == []
    assert store.list(profile="default") == []


def test_secrets_reach_neither_the_llm_nor_the_store(pipeline_env):
    location, open_store = pipeline_env
    key = "sk-proj-" + "Zq8xW3vN5mK7pL2r" * 2
    pem_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
    chat = [{"role": "user", "content": f"我的OpenAI key是 {key} ，记住它"},
            {"role": "assistant", "content": "好的"},
            {"role": "user", "content": "服务器密码是 Tr0ub4dor&3x ，以后都用它登录"},
            {"role": "user", "content": f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"}]
    # The fake model repeats the user's lines back as memories: whatever it saw must not be storable.
    rules = [{"match": {"system": "记忆提取助手"},
              "json": {"persona": ["$RE:(我的OpenAI key是[^\\n]*):RE$"], "instruction": ["$RE:(服务器[^\\n]*):RE$",
                                                                                     "部署前先跑测试"]}}]
    with FakeLLM(rules) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        result = run(location, store, cfg, chat)
        raw = json.dumps(llm.requests, ensure_ascii=False)
        assert key not in raw and "Tr0ub4dor" not in raw and pem_body not in raw
        assert "[REDACTED" in raw
    assert result.status == "done"
    by_decision = {d["text"]: d["decision"] for d in result.decisions}
    assert by_decision["部署前先跑测试"] == "new"
    assert sorted(by_decision.values()) == ["new", "rejected", "rejected"]
    stored = json.dumps([m.to_json() for m in store.list(profile="default", include_hidden=True)], ensure_ascii=False)
    assert key not in stored and "Tr0ub4dor" not in stored and "REDACTED" not in stored
    spool_and_logs = "".join(p.read_text(errors="replace") for p in location.automem_dir.rglob("*")
                             if p.is_file() and "chroma" not in p.parts)
    assert key not in spool_and_logs and "Tr0ub4dor" not in spool_and_logs and pem_body not in spool_and_logs


def test_batched_judge_is_one_call_and_its_failure_changes_nothing(pipeline_env):
    from automem.extract.pipeline import make_judge

    calls = []

    class Backend:
        name, model = "openai", "m"

        def complete(self, messages, max_tokens=None):
            calls.append(messages)
            return Completion(text='["duplicate", "update"]', prompt_tokens=40, completion_tokens=6, latency_ms=1)

    details = {}
    judge = make_judge(Backend(), details)
    assert judge([("a", "b", "user"), ("c", "d", "episodic")]) == ["duplicate", "update"]
    assert len(calls) == 1
    system, user = calls[0][0]["content"], calls[0][1]["content"]
    assert "If both can be true at once, answer new" in system
    assert [json.loads(line.rstrip(",")) for line in user.splitlines()[1:-1]] == [
        {"kind": "fact", "new": "a", "old": "b"}, {"kind": "event", "new": "c", "old": "d"}]
    assert details["prompt_tokens"] == 40 and details["judge_pairs"] == 2 and details["judge_calls"] == 1
    assert make_judge(RulesBackend(), {}) is None
    assert make_judge(Backend(), {}, Config(dedup_judge=False)) is None


# -- the command line ---------------------------------------------------------------------------------------
def cli(*args, env=None, input=None, timeout=180, prefix=()):
    full_env = dict(os.environ, PYTHONPATH=str(REPO))
    full_env.update(env or {})
    return subprocess.run([*prefix, sys.executable, "-m", "automem", *args], env=full_env, input=input,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.embedder("hash")  # new / duplicate of the same words: no meaning needed, two CLI processes
def test_cli_extract_prints_each_decision(root, tmp_path):
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(SEED_CHAT, ensure_ascii=False))
    with FakeLLM([{"match": {"system": "记忆提取助手"},
                   "json": {**SEED_ANSWER, "episodic": ["x"]}}]) as llm:  # "x" is too short: rejected
        env = {"AUTOMEM_EXTRACT_BASE_URL": llm.url, "GLM_API_KEY": "k-test"}
        first = cli("extract", str(chat), "--hermes-home", str(root), env=env)
        assert first.returncode == 0, first.stderr
        lines = first.stdout.strip().splitlines()
        assert lines[0].startswith("job j_") and "openai: 4 candidates" in lines[0]
        assert sorted(line.split()[0] for line in lines[1:]) == ["new", "new", "new", "rejected"]
        assert "too short" in first.stdout
        second = cli("extract", "-", "--json", "--hermes-home", str(root), env=env,
                     input=json.dumps(SEED_CHAT, ensure_ascii=False))
        assert second.returncode == 0, second.stderr
        objs = [json.loads(line) for line in second.stdout.strip().splitlines()]
        assert sorted(o["decision"] for o in objs if "decision" in o) == ["duplicate"] * 3 + ["rejected"]
        assert objs[-1]["status"] == "done" and objs[-1]["prompt_tokens"] > 0

        stats = cli("stats", "--json", "--hermes-home", str(root), env=env)
        figures = json.loads(stats.stdout)
        assert figures["spool_depth"] == 0 and figures["dead_jobs"] == 0
        assert figures["tokens"]["prompt"] > 0 and figures["llm_latency_ms"]["jobs"] == 2

    bad = cli("extract", str(tmp_path / "missing.json"), "--hermes-home", str(root))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    one = tmp_path / "one.json"
    one.write_text('[{"role": "user", "content": "hello"}]')
    short = cli("extract", str(one), "--hermes-home", str(root))
    assert short.returncode == 0 and "nothing to extract" in short.stdout


@pytest.mark.embedder("hash")  # the offline rules path and its rerun of the same words, in CLI processes
def test_cli_extract_with_rules_and_no_network_at_all(root):
    """The offline defaults: no key, the rules extractor, the embedded store; no network namespace access."""
    prefix = ()
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        prefix = ("unshare", "-rn")  # not even loopback
    result = cli("extract", str(SAMPLE), "--hermes-home", str(root), prefix=prefix)
    assert result.returncode == 0, result.stderr
    assert "rules:" in result.stdout.splitlines()[0]
    news = [line for line in result.stdout.splitlines() if line.startswith("new")]
    assert any("vim" in line for line in news) and any("Python 3.11" in line for line in news)
    assert any("PEP8" in line for line in news) and len(news) >= 5
    again = cli("extract", str(SAMPLE), "--hermes-home", str(root), prefix=prefix)
    assert not [line for line in again.stdout.splitlines() if line.startswith(("new", "update"))], again.stdout


@pytest.mark.e2e
def test_hermes_backend_end_to_end_in_the_detached_drainer(tmp_path):
    """`auto` with no key inside Hermes: a real `hermes chat -q` ends, the detached drainer (Hermes' interpreter)
    asks the host's own model through the plugin LLM facade, and the memories are stored."""
    from automem.core.store import Store
    from automem.log import read_events
    from tests.support.hermes import HermesRoot, find_hermes, poll

    if find_hermes() is None:
        pytest.skip("hermes-agent is not installed")
    turn = "我习惯用vim编辑器，不要给我推荐nano。我的项目统一用Python 3.11。"
    rules = [{"match": {"system": "记忆提取助手"}, "json": {"persona": ["用户习惯使用vim编辑器"],
                                                         "instruction": ["项目统一使用Python 3.11"]}},
             {"match": {"system": "记忆去重助手"}, "text": '["new", "new"]'},
             {"text": "好的，记住了。"}]
    with FakeLLM(rules) as llm:
        h = HermesRoot.create(tmp_path, llm.url, extra_config="automem:\n  extract_backend: auto\n")
        h.automem("install", "--hermes-home", str(h.root), "--profile", "default").check()
        res = h.chat(turn).check()
        loc = Location(h.root, "default")
        done = poll(lambda: [e for e in read_events(loc, "job") if e["status"] == "done"], deadline_s=120,
                    what="the extraction job done")
        assert done[0]["backend"] == "hermes" and done[0]["session_id"] == res.session_id
        extraction = [r for r in llm.chat_requests() if "记忆提取助手" in str(r["body"]["messages"][0]["content"])]
        assert len(extraction) == 1 and extraction[0]["body"]["model"] == "fake-model"  # the host's model
        assert done[0]["prompt_tokens"] > 0
    store = Store(loc, Config())
    try:
        assert sorted(m.text for m in store.list(profile="default")) == \
            ["用户习惯使用vim编辑器", "项目统一使用Python 3.11"]
    finally:
        store.close()
