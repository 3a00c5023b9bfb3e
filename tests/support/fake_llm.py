"""A scripted fake of an OpenAI-compatible LLM server, for tests. Standard library only.

It is a real HTTP server on 127.0.0.1 (ThreadingHTTPServer) that answers:
  POST .../chat/completions  JSON, or SSE when the request says "stream": true (what the `openai` client and
                             Hermes 0.19 send), with `usage` (and a usage chunk when stream_options.include_usage)
  POST .../embeddings        deterministic hashed bag-of-token vectors (similar texts get similar vectors)
  GET  .../models            the model list
  GET  /_fake/requests       the request log;  POST /_fake/script  replaces the rules (and resets their counters)

Use it in-process:

    with FakeLLM([{"match": {"user": "vim"}, "json": {"persona": ["..."]}}]) as llm:
        requests.post(llm.url + "/chat/completions", json=...)      # llm.url == "http://127.0.0.1:PORT/v1"
        llm.requests                                                 # every request, parsed

or as a process (the Hermes end-to-end tests run `hermes` in a subprocess against it):

    python tests/support/fake_llm.py --port 0 --script rules.json --log requests.jsonl --pidfile fake.pid \
        [--portfile port.txt]

The script file is re-read when it changes. It is a JSON list of rules, or {"rules": [...], "default": {...},
"models": [...], "embedding_dim": N}. Rules are tried in order; the first whose `match` holds answers. A rule with
`times: N` answers N times, then falls through to the next rules. No rule: `default` answers (plain text
"FAKE-ANSWER-<n>").

match (every given key must hold; a rule without `match` always matches):
  user / user_re          substring / regex (search) of the last user message (content parts are joined)
  system / system_re      the same for the system prompt(s)
  any / any_re            the same for all messages' text, tool results included
  tool_result / tool_result_re   the same for the last tool message
  after_tool              true: the last message is a tool result; "name": a result of that tool
  no_tools                true: the request carries no tools;  has_tool: "name": the request offers that tool
  stream, model           exact value;   path: "/v1/embeddings" makes the rule apply to that endpoint instead
answer:
  text | json             the assistant content (json is serialised with ensure_ascii=False)
  per_item                a JSON list with one answer per item of the JSON array the last user message holds (a
                          batched judge call): {"answers": [[new, old, answer], ...], "default": answer}; an
                          entry whose new is null answers any item with that old
  tool_calls              [{"name": ..., "arguments": {...} or "raw json string"}]
  status, retry_after, error   an HTTP error (JSON error body) with an optional Retry-After header
  delay                   seconds to wait before answering (for client timeouts)
  chunk_delay             seconds between SSE chunks
  raw                     send this body as-is with status 200 (garbage that is not JSON at all)
  truncate_body           send only the first N bytes of the body, then close the connection
  close                   true: close the connection without any answer
  finish_reason, usage    override those fields (usage is merged into the computed one)
Templating in text and in tool-call argument strings: {{1}} / {{name}} are groups of the rule's regex match;
"$RE:(pattern):RE$" is replaced by group 1 of that pattern searched in all messages' text; {{n}} is the request
number (1-based) and {{rule_hits}} how often this rule has answered, this time included.

Every request is logged (in memory and, with --log / log_path, as JSON lines): path, method, headers without
secrets (the Authorization value is replaced by `auth_sha256`, its first 12 hex digits), body, and the rule index.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable

SECRET_HEADERS = ("authorization", "api-key", "x-api-key", "proxy-authorization")
DEFAULT_MODELS = ["fake-model", "glm-4-flash"]
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
_RE_TEMPLATE = re.compile(r"\$RE:(.+?):RE\$")
_GROUP_TEMPLATE = re.compile(r"\{\{(\w+)\}\}")


# -- pure helpers ----------------------------------------------------------------------------------------------
def content_text(content: Any) -> str:
    """The text of a message content: a string, or a list of parts ({"type": "text", "text": ...})."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    out.append(text)
        return "\n".join(out)
    return str(content)


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one per CJK character, word or punctuation mark."""
    return len(_TOKEN.findall(text or ""))


def hash_embedding(text: str, dim: int = 256) -> list[float]:
    """A unit vector from hashed tokens (and CJK bigrams): equal texts are equal, overlapping texts close."""
    toks = [t.lower() for t in _TOKEN.findall(text or "") if t.strip()]
    feats = toks + [a + b for a, b in zip(toks, toks[1:])]
    vec = [0.0] * dim
    for feat in feats:
        h = hashlib.sha256(feat.encode("utf-8")).digest()
        idx = int.from_bytes(h[:4], "big") % dim
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


def _last(messages: list[dict], role: str) -> dict | None:
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == role:
            return msg
    return None


def _tool_name_of_result(messages: list[dict], tool_msg: dict) -> str | None:
    if tool_msg.get("name"):
        return str(tool_msg["name"])
    call_id = tool_msg.get("tool_call_id")
    for msg in reversed(messages):
        for call in (msg.get("tool_calls") or []) if isinstance(msg, dict) else []:
            if isinstance(call, dict) and call.get("id") == call_id:
                return (call.get("function") or {}).get("name")
    return None


def _text_match(value: str, sub: str | None, pattern: str | None) -> tuple[bool, re.Match | None]:
    if sub is not None and sub not in value:
        return False, None
    if pattern is not None:
        m = re.search(pattern, value, re.DOTALL)
        if not m:
            return False, None
        return True, m
    return True, None


def rule_matches(rule: dict, path: str, body: dict) -> tuple[bool, re.Match | None]:
    """Whether `rule` answers this request, and the last regex match (for templating)."""
    match = rule.get("match") or {}
    want_path = match.get("path")
    if want_path is not None:
        if not path.endswith(want_path.split("/v1", 1)[-1] if "/v1" in want_path else want_path):
            return False, None
    elif not path.endswith("/chat/completions"):
        return False, None
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    messages = [m for m in messages if isinstance(m, dict)]
    last_match: re.Match | None = None

    def check(value: str, sub_key: str, re_key: str) -> bool:
        nonlocal last_match
        if sub_key not in match and re_key not in match:
            return True
        ok, m = _text_match(value, match.get(sub_key), match.get(re_key))
        if m is not None:
            last_match = m
        return ok

    user = _last(messages, "user")
    if not check(content_text(user.get("content")) if user else "", "user", "user_re"):
        return False, None
    system = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    if not check(system, "system", "system_re"):
        return False, None
    everything = "\n".join(content_text(m.get("content")) for m in messages)
    if not check(everything, "any", "any_re"):
        return False, None
    tool_msg = _last(messages, "tool")
    if not check(content_text(tool_msg.get("content")) if tool_msg else "", "tool_result", "tool_result_re"):
        return False, None
    if ("tool_result" in match or "tool_result_re" in match) and tool_msg is None:
        return False, None
    if "after_tool" in match:
        want = match["after_tool"]
        last_msg = messages[-1] if messages else {}
        is_tool = last_msg.get("role") == "tool"
        if want is False and is_tool:
            return False, None
        if want is True and not is_tool:
            return False, None
        if isinstance(want, str) and (not is_tool or _tool_name_of_result(messages, last_msg) != want):
            return False, None
    tools = body.get("tools") or []
    if match.get("no_tools") is True and tools:
        return False, None
    if match.get("no_tools") is False and not tools:
        return False, None
    if "has_tool" in match:
        names = {((t or {}).get("function") or {}).get("name") for t in tools if isinstance(t, dict)}
        if match["has_tool"] not in names:
            return False, None
    if "stream" in match and bool(body.get("stream")) != bool(match["stream"]):
        return False, None
    if "model" in match and body.get("model") != match["model"]:
        return False, None
    return True, last_match


def render(template: str, m: re.Match | None, messages: list[dict], variables: dict) -> str:
    """Fill {{1}} / {{name}} from the rule's regex match, $RE:(...):RE$ from the conversation, and variables."""
    everything = "\n".join(content_text(msg.get("content")) for msg in messages if isinstance(msg, dict))

    def from_conversation(mm: re.Match) -> str:
        found = re.search(mm.group(1), everything, re.DOTALL)
        if not found:
            return ""
        return found.group(1) if found.groups() else found.group(0)

    out = _RE_TEMPLATE.sub(from_conversation, template)

    def group(mm: re.Match) -> str:
        key = mm.group(1)
        if key in variables:
            return str(variables[key])
        if m is not None:
            try:
                value = m.group(int(key)) if key.isdigit() else m.group(key)
                return value if value is not None else ""
            except IndexError:
                return mm.group(0)
        return mm.group(0)

    return _GROUP_TEMPLATE.sub(group, out)


def _render_value(value: Any, m: re.Match | None, messages: list[dict], variables: dict) -> Any:
    if isinstance(value, str):
        return render(value, m, messages, variables)
    if isinstance(value, list):
        return [_render_value(v, m, messages, variables) for v in value]
    if isinstance(value, dict):
        return {k: _render_value(v, m, messages, variables) for k, v in value.items()}
    return value


def per_item_answers(spec: dict, messages: list[dict]) -> list:
    """One answer per item of the JSON array in the last user message, looked up by its (new, old)."""
    last = _last(messages, "user")
    try:
        items = json.loads(content_text(last.get("content")) if last else "[]")
    except ValueError:
        items = []
    table = {(new, old): said for new, old, said in spec.get("answers", [])}
    default = spec.get("default", "")
    return [table.get((it.get("new"), it.get("old")), table.get((None, it.get("old")), default))
            if isinstance(it, dict) else default for it in (items if isinstance(items, list) else [])]


def build_completion(answer: dict, body: dict, m: re.Match | None, variables: dict) -> tuple[dict, str]:
    """(message dict, finish_reason) for a rule's answer: content and/or tool calls, templated."""
    messages = [x for x in (body.get("messages") or []) if isinstance(x, dict)]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if "json" in answer:
        message["content"] = json.dumps(_render_value(answer["json"], m, messages, variables), ensure_ascii=False)
    elif "per_item" in answer:
        message["content"] = json.dumps(per_item_answers(answer["per_item"], messages), ensure_ascii=False)
    elif "text" in answer:
        message["content"] = render(str(answer["text"]), m, messages, variables)
    calls = []
    for call in answer.get("tool_calls") or []:
        args = call.get("arguments", {})
        if isinstance(args, str):
            args_text = render(args, m, messages, variables)
        else:
            args_text = json.dumps(_render_value(args, m, messages, variables), ensure_ascii=False)
        calls.append({"id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                      "function": {"name": call["name"], "arguments": args_text}})
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    finish = answer.get("finish_reason") or ("tool_calls" if calls else "stop")
    return message, finish


def compute_usage(body: dict, message: dict, override: dict | None) -> dict:
    prompt = sum(count_tokens(content_text(m.get("content"))) for m in (body.get("messages") or [])
                 if isinstance(m, dict))
    completion = count_tokens(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        completion += count_tokens(call["function"]["name"]) + count_tokens(call["function"]["arguments"])
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if override:
        usage.update(override)
        if "total_tokens" not in override:
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def json_body(message: dict, finish: str, usage: dict, model: str) -> bytes:
    obj = {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
           "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def sse_events(message: dict, finish: str, usage: dict, model: str, include_usage: bool,
               piece: int = 16) -> list[bytes]:
    """The chunks of a streamed answer, as the openai client expects them (`data: {...}\\n\\n`, then [DONE])."""
    cid, created = f"chatcmpl-{uuid.uuid4().hex[:16]}", int(time.time())

    def chunk(delta: dict, finish_reason: str | None = None, **extra) -> bytes:
        obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
        obj.update(extra)
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    for start in range(0, len(text), piece):
        out.append(chunk({"content": text[start:start + piece]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        args = call["function"]["arguments"]
        for start in range(0, len(args), piece * 2):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[start:start + piece * 2]}}]}))
    out.append(chunk({}, finish))
    if include_usage:
        obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [],
               "usage": usage}
        out.append(b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict:
    out: dict[str, str] = {}
    for name, value in headers:
        low = name.lower()
        if low in SECRET_HEADERS:
            secret = value.split(" ", 1)[1] if low.endswith("authorization") and " " in value else value
            out[f"{low}_sha256"] = hashlib.sha256(secret.encode("utf-8")).hexdigest()[:12]
        else:
            out[low] = value
    return out


def secret_digest(secret: str) -> str:
    """What the log records instead of a key: compare with this in tests."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()[:12]


# -- the script --------------------------------------------------------------------------------------------------
class Script:
    """Rules + per-rule hit counters; thread-safe. Optionally backed by a file that is re-read when it changes."""

    def __init__(self, rules: list | dict | None = None, path: str | os.PathLike | None = None):
        self._lock = threading.Lock()
        self.path = Path(path) if path else None
        self._mtime: float | None = None
        self.rules: list[dict] = []
        self.default: dict = {"text": "FAKE-ANSWER-{{n}}"}
        self.models: list[str] = list(DEFAULT_MODELS)
        self.embedding_dim = 256
        self.hits: list[int] = []
        if rules is not None:
            self.load(rules)
        elif self.path is not None:
            self._reload_file(force=True)

    def load(self, data: list | dict) -> None:
        if isinstance(data, dict):
            rules = data.get("rules") or []
            default = data.get("default") or {"text": "FAKE-ANSWER-{{n}}"}
            models = data.get("models") or list(DEFAULT_MODELS)
            dim = int(data.get("embedding_dim") or 256)
        else:
            rules, default, models, dim = list(data), {"text": "FAKE-ANSWER-{{n}}"}, list(DEFAULT_MODELS), 256
        with self._lock:
            self.rules = copy.deepcopy(rules)
            self.default, self.models, self.embedding_dim = default, models, dim
            self.hits = [0] * len(self.rules)

    def _reload_file(self, force: bool = False) -> None:
        if self.path is None:
            return
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            return
        if force or mtime != self._mtime:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                print(f"fake_llm: cannot read script {self.path}: {exc}", file=sys.stderr)
                return
            self.load(data)
            self._mtime = mtime

    def pick(self, path: str, body: dict) -> tuple[int | None, dict, re.Match | None, int]:
        """(rule index or None for the default, the answer, the regex match, hits of that rule so far)."""
        self._reload_file()
        with self._lock:
            for i, rule in enumerate(self.rules):
                times = rule.get("times")
                if times is not None and self.hits[i] >= int(times):
                    continue
                ok, m = rule_matches(rule, path, body)
                if ok:
                    self.hits[i] += 1
                    return i, rule, m, self.hits[i]
            return None, self.default, None, 0


# -- the HTTP server ------------------------------------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, addr, handler, fake: "FakeLLM"):
        self.fake = fake
        super().__init__(addr, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the JSON log is the record
        pass

    # -- plumbing --
    def _read_body(self) -> tuple[Any, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        text = raw.decode("utf-8", errors="replace")
        try:
            return (json.loads(text) if text else {}), text
        except ValueError:
            return None, text

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict | None = None, truncate: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        if truncate is not None:
            self.send_header("Connection", "close")
        self.end_headers()
        if truncate is not None:
            self.wfile.write(body[:truncate])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(body)

    def _json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), headers=headers)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- verbs --
    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        if path == "/_fake/requests":
            self._json(200, fake.requests)
        elif path.endswith("/models"):
            fake.record(path, "GET", self.headers.items(), None, None)
            models = fake.script.models
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                          "owned_by": "fake"} for m in models]})
        elif path in ("/", "/health", "/_fake/health"):
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        body, raw_text = self._read_body()
        if path == "/_fake/script":
            fake.script.load(body if body is not None else [])
            self._json(200, {"ok": True, "rules": len(fake.script.rules)})
            return
        if path == "/_fake/reset":
            fake.clear()
            self._json(200, {"ok": True})
            return
        if body is None or not isinstance(body, dict):
            fake.record(path, "POST", self.headers.items(), raw_text, None)
            self._json(400, {"error": {"message": "request body is not a JSON object",
                                       "type": "invalid_request_error"}})
            return
        is_chat = path.endswith("/chat/completions")
        is_embed = path.endswith("/embeddings")
        if not (is_chat or is_embed):
            fake.record(path, "POST", self.headers.items(), body, None)
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        index, answer, m, hits = fake.script.pick(path, body)
        n = fake.record(path, "POST", self.headers.items(), body, index)
        variables = {"n": n, "rule_hits": hits}
        if not fake.wait(float(answer.get("delay") or 0)):
            self._drop()
            return
        if answer.get("close"):
            self._drop()
            return
        if answer.get("status") and int(answer["status"]) != 200:
            headers = {}
            if answer.get("retry_after") is not None:
                headers["Retry-After"] = answer["retry_after"]
            status = int(answer["status"])
            message = answer.get("error") or f"fake error {status}"
            self._json(status, {"error": {"message": message, "type": "fake_error", "code": status}}, headers)
            return
        truncate = answer.get("truncate_body")
        if "raw" in answer:
            self._send(200, render(str(answer["raw"]), m, body.get("messages") or [], variables).encode("utf-8"),
                       truncate=truncate)
            return
        if is_embed:
            self._embeddings(body, truncate)
            return
        model = str(body.get("model") or "fake-model")
        message, finish = build_completion(answer, body, m, variables)
        usage = compute_usage(body, message, answer.get("usage"))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(sse_events(message, finish, usage, model, include_usage),
                         float(answer.get("chunk_delay") or 0), truncate)
        else:
            self._send(200, json_body(message, finish, usage, model), truncate=truncate)

    def _embeddings(self, body: dict, truncate: int | None) -> None:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list):
            self._json(400, {"error": {"message": "input must be a string or a list", "type": "invalid_request_error"}})
            return
        dim = int(body.get("dimensions") or self.server.fake.script.embedding_dim)
        data = [{"object": "embedding", "index": i, "embedding": hash_embedding(str(t), dim)}
                for i, t in enumerate(inputs)]
        tokens = sum(count_tokens(str(t)) for t in inputs)
        obj = {"object": "list", "data": data, "model": body.get("model") or "fake-embedding",
               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        self._send(200, json.dumps(obj).encode("utf-8"), truncate=truncate)

    def _stream(self, events: list[bytes], chunk_delay: float, truncate: int | None) -> None:
        # No Content-Length: the body ends when the connection closes (valid HTTP/1.1, what SSE servers do).
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        try:
            for event in events:
                if truncate is not None and sent + len(event) > truncate:
                    self.wfile.write(event[:max(0, truncate - sent)])
                    self.wfile.flush()
                    break
                self.wfile.write(event)
                self.wfile.flush()
                sent += len(event)
                if chunk_delay and not self.server.fake.wait(chunk_delay):
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._drop()


class FakeLLM:
    """The fake server, in a background thread of this process. A context manager."""

    def __init__(self, rules: list | dict | None = None, *, port: int = 0, host: str = "127.0.0.1",
                 log_path: str | os.PathLike | None = None, script_path: str | os.PathLike | None = None):
        self.script = Script(rules, script_path) if (rules is not None or script_path) else Script([])
        self.host, self._port = host, port
        self.log_path = Path(log_path) if log_path else None
        self.requests: list[dict] = []
        self._log_lock = threading.Lock()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --
    def start(self) -> "FakeLLM":
        self._stop.clear()
        self._server = _Server((self.host, self._port), _Handler, self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in a `delay`
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait(self, seconds: float) -> bool:
        """Sleep `seconds`; False when the server is stopping meanwhile."""
        if seconds <= 0:
            return True
        return not self._stop.wait(seconds)

    # -- addresses --
    @property
    def port(self) -> int:
        assert self._server is not None, "the fake LLM is not running"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The OpenAI base URL (what `base_url` settings take)."""
        return f"http://{self.host}:{self.port}/v1"

    # -- script and log --
    def set_rules(self, rules: list | dict) -> None:
        self.script.load(rules)

    def record(self, path: str, method: str, headers, body: Any, rule: int | None) -> int:
        with self._log_lock:
            n = len(self.requests) + 1
            entry = {"n": n, "ts": round(time.time(), 3), "method": method, "path": path,
                     "headers": redact_headers(headers), "body": body, "rule": rule}
            self.requests.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            return n

    def clear(self) -> None:
        with self._log_lock:
            self.requests.clear()

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]


def read_log(path: str | os.PathLike) -> list[dict]:
    """The requests a standalone fake server logged (JSON lines)."""
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


# -- standalone process ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Scripted fake OpenAI-compatible LLM server on 127.0.0.1.")
    ap.add_argument("--port", type=int, default=0, help="0: a free port (see --portfile and the first stdout line)")
    ap.add_argument("--script", help="JSON rules file (re-read when it changes)")
    ap.add_argument("--log", help="append every request here as JSON lines")
    ap.add_argument("--pidfile", help="write this process's pid here (removed at exit)")
    ap.add_argument("--portfile", help="write the port here once listening")
    args = ap.parse_args(argv)

    fake = FakeLLM(port=args.port, log_path=args.log, script_path=args.script)
    fake.start()
    stopping = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.pidfile:
        Path(args.pidfile).write_text(str(os.getpid()))
    if args.portfile:
        tmp = f"{args.portfile}.tmp"
        Path(tmp).write_text(str(fake.port))
        os.replace(tmp, args.portfile)
    print(f"fake_llm listening on {fake.url}", flush=True)
    try:
        while not stopping.wait(0.2):
            pass
    finally:
        fake.stop()
        if args.pidfile:
            try:
                os.unlink(args.pidfile)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
