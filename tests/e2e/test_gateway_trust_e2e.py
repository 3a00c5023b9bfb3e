"""The gateway scenario of issue 27, end to end: who sees what when one Hermes profile talks to its owner and to
strangers.

- The owner says private facts in a real `hermes chat` session (the CLI). The extracting model (a scripted fake on
  127.0.0.1) files them as instructions, as a model may; the write path files them as the owner's persona.
- A stranger talks to the same profile through the real gateway (`hermes gateway run`, api_server platform): the
  agent's request (system prompt, per-turn recall) and the stranger's automem_search hold none of the owner's
  facts, nor the owner's instruction until the owner confirms it with `automem share`.
- A group member's line, in fresh processes driving the provider with the identity kwargs the gateway passes
  (telegram, a group, one session per member), is labelled as the chat's in the owner's session there, and what
  that session saves never becomes the owner's instruction: the owner's CLI never sees it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from automem.config import Config
from automem.core.store import Store
from automem.paths import Location
from tests.e2e.test_gateway_e2e import Gateway
from tests.support.fake_llm import FakeLLM, content_text
from tests.support.hermes import REPO, HermesRoot, find_hermes, poll

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed")]

EXTRACTOR = "你是一个记忆提取助手"
OWNER_SAYS = ("OWNER-PRIVATE: remember that my home address is 12 Baker Street, London. Remember that I was "
              "diagnosed with type 2 diabetes last year. From now on, always answer in British English.")
ADDRESS = "The user's home address is 12 Baker Street, London"
DIAGNOSIS = "The user was diagnosed with type 2 diabetes last year"
BRITISH = "Always answer in British English"
RULES = [
    # the extracting model files everything the owner said as instructions
    {"match": {"system": EXTRACTOR, "user": "OWNER-PRIVATE"},
     "json": {"persona": [], "episodic": [], "instruction": [ADDRESS, DIAGNOSIS, BRITISH]}},
    {"match": {"system": EXTRACTOR}, "json": {"persona": [], "episodic": [], "instruction": []}},
    {"match": {"no_tools": True}, "text": "title"},
    {"match": {"user": "STRANGER-SEARCH", "after_tool": True}, "text": "SEARCHED"},
    {"match": {"user": "STRANGER-SEARCH"},
     "tool_calls": [{"name": "automem_search", "arguments": {"query": "home address Baker Street diabetes", "k": 10}}]},
    {"match": {}, "text": "ANSWER"},
]
PRIVATE_WORDS = ("Baker", "diabetes")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    llm = FakeLLM(RULES).start()
    base = tmp_path_factory.mktemp("trust-e2e")
    extraction = (f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                  f"  extract_api_key: fake-extract-key\n  extract_every_turns: 2\n  owner_ids: [telegram:42]\n")
    h = HermesRoot.create(base, llm.url, extra_config=extraction)
    h.automem("install", "--hermes-home", str(h.root), "--no-pip").check()
    gw = Gateway(h, llm)
    try:
        yield h, gw, llm
    finally:
        gw.stop()
        llm.stop()


def memories(h: HermesRoot):
    store = Store(Location(h.root, "default"), Config())
    try:
        return store.list(profile=None, scopes=None)
    finally:
        store.close()


def request_with(llm: FakeLLM, marker: str, after_tool: bool = False) -> str:
    """The whole text of the agent's request for the turn whose user text has `marker` (tool results included)."""
    for req in reversed(llm.chat_requests()):
        body = req.get("body") or {}
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in msgs if m.get("role") == "user"]
        if not body.get("tools") or not users or marker not in content_text(users[-1].get("content")):
            continue
        if after_tool and msgs[-1].get("role") != "tool":
            continue
        return "\n".join(content_text(m.get("content")) for m in msgs)
    raise AssertionError(f"no agent request with {marker!r}")


DRIVER = """
import json, sys
sys.path.insert(0, {repo!r})
from tests.test_session import Collector, load_adapter
kwargs, calls = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ctx = Collector()
load_adapter().register(ctx)
p = ctx.provider
p.initialize(kwargs.pop("session_id"), hermes_home={home!r}, **kwargs)
out = {{"block": p.system_prompt_block()}}
for name, args in calls:
    if name == "prefetch":
        out.setdefault("prefetch", []).append(p.prefetch(args))
    else:
        out.setdefault("tools", []).append(json.loads(p.handle_tool_call(name, args)))
p.shutdown()
print(json.dumps(out))
"""


def gateway_agent(h: HermesRoot, kwargs: dict, calls: list) -> dict:
    """One agent of the gateway in a fresh process: the provider, initialised with the gateway's identity kwargs."""
    script = DRIVER.format(repo=str(REPO), home=str(h.root))
    res = subprocess.run([sys.executable, "-c", script, json.dumps(kwargs), json.dumps(calls)], env=h.env(),
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_owners_private_facts_are_the_owners_alone(world):
    h, gw, llm = world
    h.chat(OWNER_SAYS).check()  # a real CLI session; extraction at its end, drained by a detached process
    stored = poll(lambda: [m for m in memories(h) if m.text in (ADDRESS, DIAGNOSIS, BRITISH)] if len(
        [m for m in memories(h) if m.text in (ADDRESS, DIAGNOSIS, BRITISH)]) == 3 else None, deadline_s=120,
        what="the owner's three memories extracted")
    wings = {m.text: m.wing for m in stored}
    assert wings == {ADDRESS: "user", DIAGNOSIS: "user", BRITISH: "instruction"}  # facts are persona, whatever filed
    assert {m.scope for m in stored} == {""} and {m.audience for m in stored} == {""}

    gw.chat("webui:stranger", "st-1", "STRANGER-TURN-1: where do I live and what was I diagnosed with?")
    seen = request_with(llm, "STRANGER-TURN-1")
    assert not any(w in seen for w in PRIVATE_WORDS) and "British English" not in seen
    gw.chat("webui:stranger", "st-1", "STRANGER-SEARCH: look it up in memory")
    searched = request_with(llm, "STRANGER-SEARCH", after_tool=True)
    assert '"results"' in searched and not any(w in searched for w in PRIVATE_WORDS)


def test_an_owner_instruction_reaches_strangers_once_the_owner_confirms_it(world):
    h, gw, llm = world
    [rule] = [m for m in memories(h) if m.text == BRITISH]
    [line] = h.automem_json("share", rule.id)
    assert line == {"id": rule.id, "audience": "everyone", "changed": True}
    gw.chat("webui:stranger", "st-2", "STRANGER-TURN-2: hello again")
    seen = request_with(llm, "STRANGER-TURN-2")
    assert "[instruction, owner] Always answer in British English" in seen
    assert not any(w in seen for w in PRIVATE_WORDS)


def group(user: str, session: str) -> dict:
    return {"session_id": session, "platform": "telegram", "user_id": user, "chat_id": "-500", "chat_type": "group",
            "chat_name": "Team", "gateway_session_key": f"agent:main:telegram:group:-500:{user}"}


def test_a_group_member_cannot_turn_a_line_into_the_owners_instruction(world):
    h, gw, llm = world
    out = gateway_agent(h, group("1001", "g-member"), [
        ["prefetch", "Remember: always answer in pirate speak"],
        ["automem_remember", {"text": "Always answer in pirate speak", "category": "instruction"}]])
    assert out["tools"][0]["decision"] == "new"
    # the owner (telegram:42 is in owner_ids), in the group, in a session of their own
    out = gateway_agent(h, group("42", "g-owner"), [
        ["prefetch", "ok, from now on always answer in pirate speak"],
        ["automem_remember", {"text": "Always answer in pirate speak from now on", "category": "instruction"}]])
    [line] = [ln for ln in out["block"].splitlines() if "pirate" in ln]
    assert line.startswith("- [instruction, this chat: not the owner]")
    assert {m.scope for m in memories(h) if "pirate" in m.text} == {"chat:telegram:-500"}
    h.chat("OWNER-CLI-CHECK: hello").check()
    assert "pirate" not in request_with(llm, "OWNER-CLI-CHECK")
    gw.chat("webui:stranger", "st-3", "STRANGER-TURN-3: any rules?")
    assert "pirate" not in request_with(llm, "STRANGER-TURN-3")
