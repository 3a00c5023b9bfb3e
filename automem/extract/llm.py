"""LLM backends for extraction (P0) and the batched dedup judge.

- `openai`: any OpenAI-compatible chat-completions endpoint through `requests` (default: Zhipu's GLM-4-Flash).
- `hermes`: the host's own model through Hermes' plugin LLM facade. automem never imports Hermes at import time:
  the Hermes adapter registers its `ctx.llm.complete` with `register_host_llm`, and a detached drainer (which runs
  in Hermes' own interpreter) imports `agent.plugin_llm` lazily, inside the call.
- `rules`: the offline extractor (`automem.extract.rules`), no model at all.
- `auto`: `openai` when a key is configured, else `hermes` for jobs that came from Hermes when its facade is
  reachable, else `rules`.

Failures are `LLMError`s that say whether a later attempt may succeed (timeouts, connection errors, 429 with its
Retry-After, 5xx, unusable output) or not (401/403/404 and other configuration errors, with what to fix).
"""

from __future__ import annotations

import email.utils
import importlib.util
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..config import Config
from ..errors import LLMError
from ..paths import Location
from ..text import redact_secrets, scrub_surrogates

HOST_PLUGIN_ID = "automem"


@dataclass
class Completion:
    """One model answer and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    model: str = ""
    finish_reason: str | None = None


class ChatBackend(Protocol):
    name: str
    model: str

    def complete(self, messages: list[dict], max_tokens: int | None = None) -> Completion: ...


def redact_messages(messages: list[dict]) -> list[dict]:
    """The messages as they may leave the machine: every text redacted (the transcript already is; this also
    covers known memories and judge pairs that were stored before a pattern existed)."""
    out = []
    for msg in messages:
        msg = dict(msg)
        content = msg.get("content")
        if isinstance(content, str):
            msg["content"] = redact_secrets(scrub_surrogates(content))
        elif isinstance(content, list):
            msg["content"] = [dict(p, text=redact_secrets(scrub_surrogates(p["text"])))
                              if isinstance(p, dict) and isinstance(p.get("text"), str) else p for p in content]
        out.append(msg)
    return out


def llm_error(message: str, retryable: bool, retry_after: float | None = None) -> LLMError:
    err = LLMError(message, retryable=retryable)
    err.retry_after = retry_after  # type: ignore[attr-defined]
    return err


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def classify_http_error(status: int, body: str, url: str, retry_after: str | None = None) -> LLMError:
    """The LLMError for a non-200 answer: what to do about it, and whether retrying can help."""
    detail = " ".join((body or "").split())[:160]
    detail = f": {detail}" if detail else ""
    if status == 429:
        return llm_error(f"the extraction API is rate limiting (HTTP 429){detail}", True,
                         parse_retry_after(retry_after))
    if status >= 500:
        return llm_error(f"the extraction API failed (HTTP {status}){detail}", True, parse_retry_after(retry_after))
    if status in (401, 403):
        return llm_error(f"the extraction API at {url} rejected the key (HTTP {status}): set automem.extract_api_key "
                         f"or $GLM_API_KEY to a valid key, or use extract_backend: rules", False)
    if status == 404:
        return llm_error(f"{url} answered 404: check automem.extract_base_url (an OpenAI-compatible base URL, "
                         f"ending before /chat/completions) and automem.extract_model{detail}", False)
    if status in (408, 409, 425):
        return llm_error(f"the extraction API asked to retry (HTTP {status}){detail}", True,
                         parse_retry_after(retry_after))
    return llm_error(f"the extraction API refused the request (HTTP {status}){detail}; check automem.extract_model "
                     f"and automem.extract_base_url", False)


def completion_from_json(data: Any, latency_ms: float, model: str) -> Completion:
    """A Completion from a chat-completions JSON body; a body without an answer is a retryable error."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content")
        if isinstance(content, list):  # some servers answer content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is None and message.get("reasoning_content"):
            content = ""  # a reasoning model that spent its budget thinking: parse treats it as cut off
        if content is not None and not isinstance(content, str):
            raise TypeError("content is not a string")
        usage = data.get("usage") or {}
        return Completion(text=content if content is not None else "",
                          prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens") or 0), latency_ms=latency_ms,
                          model=str(data.get("model") or model), finish_reason=choice.get("finish_reason"))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise llm_error(f"the extraction API answered without a message ({exc.__class__.__name__}: {exc})",
                        True) from None


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions endpoint, through `requests`."""

    name = "openai"

    def __init__(self, config: Config, session: Any = None):
        self.config = config
        self.base_url = (config.extract_base_url or "").rstrip("/")
        self.model = config.extract_model
        self.api_key = config.resolved_extract_api_key
        self._session = session
        self._session_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _http(self) -> Any:
        with self._session_lock:
            if self._session is None:
                import requests

                self._session = requests.Session()
            return self._session

    def complete(self, messages: list[dict], max_tokens: int | None = None) -> Completion:
        import requests

        if not self.base_url.startswith(("http://", "https://")):
            raise llm_error(f"automem.extract_base_url={self.base_url!r} is not an http(s) URL", False)
        if not self.api_key:
            raise llm_error("no API key for the extraction LLM: set automem.extract_api_key or $GLM_API_KEY, "
                            "or use extract_backend: rules", False)
        body = {"model": self.model, "messages": redact_messages(messages),
                "temperature": self.config.extract_temperature,
                "max_tokens": max_tokens or self.config.extract_max_tokens, "stream": False}
        headers = {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"}
        start = time.monotonic()
        try:
            resp = self._http().post(self.url, json=body, headers=headers, timeout=self.config.extract_timeout)
        except requests.exceptions.Timeout:
            raise llm_error(f"the extraction API did not answer within {self.config.extract_timeout:g} s",
                            True) from None
        except requests.exceptions.ConnectionError as exc:
            raise llm_error(f"cannot reach the extraction API at {self.base_url} ({_short(exc)})", True) from None
        except requests.exceptions.RequestException as exc:
            raise llm_error(f"the request to the extraction API failed ({_short(exc)})", True) from None
        latency_ms = (time.monotonic() - start) * 1000
        if resp.status_code != 200:
            raise classify_http_error(resp.status_code, _safe_text(resp), self.url, resp.headers.get("Retry-After"))
        try:
            data = resp.json()
        except ValueError:
            raise llm_error(f"the extraction API answered something that is not JSON: "
                            f"{_safe_text(resp)[:80]!r}", True) from None
        except Exception as exc:  # the body was cut off mid-read
            raise llm_error(f"the extraction API's answer was cut off ({_short(exc)})", True) from None
        return completion_from_json(data, latency_ms, self.model)


def _safe_text(resp: Any) -> str:
    try:
        return resp.text or ""
    except Exception:
        return ""


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{exc.__class__.__name__}: {text[:160]}" if text else exc.__class__.__name__


# -- the host's model (Hermes) -------------------------------------------------------------------------------
# A host completion: PluginLlm.complete(messages, temperature=, max_tokens=, timeout=, purpose=) -> a result with
# `.text` and `.usage.input_tokens/.output_tokens` (a plain string is accepted too).
HostComplete = Callable[..., Any]

_host_llms: dict[str, HostComplete] = {}
_host_lock = threading.Lock()


def register_host_llm(profile: str, complete: HostComplete | None) -> None:
    """Called by the Hermes adapter with `ctx.llm.complete`: this process may use the host's model for `profile`."""
    with _host_lock:
        if complete is None:
            _host_llms.pop(profile, None)
        else:
            _host_llms[profile] = complete


def registered_host_llm(profile: str) -> HostComplete | None:
    with _host_lock:
        return _host_llms.get(profile)


def hermes_importable() -> bool:
    try:
        return importlib.util.find_spec("agent.plugin_llm") is not None
    except (ImportError, ValueError):
        return False


def _same_path(a: str, b: str) -> bool:
    try:
        return os.path.realpath(os.path.expanduser(a)) == os.path.realpath(os.path.expanduser(b))
    except OSError:
        return False


def hermes_facade(location: Location) -> HostComplete:
    """`PluginLlm(plugin_id="automem").complete` of this interpreter's Hermes, for `location`'s profile.

    Only in a process whose HERMES_HOME is that profile's home (or unset: a detached drainer sets it), because
    Hermes resolves the model and its credentials from HERMES_HOME.
    """
    home = str(location.profile_home)
    current = os.environ.get("HERMES_HOME")
    if current and not _same_path(current, home):
        raise llm_error(f"the host model of profile {location.profile!r} is reachable only from a process with "
                        f"HERMES_HOME={home} (this one has {current})", True)
    if not current:
        os.environ["HERMES_HOME"] = home  # a drainer process of its own: Hermes reads its config from here
    try:
        from agent.plugin_llm import PluginLlm  # lazy: automem must import without Hermes
    except ImportError as exc:
        raise llm_error(f"extract_backend is hermes but Hermes is not importable from {sys.executable} ({exc}); "
                        f"run automem from Hermes' Python, or set extract_backend: openai or rules", False) from None
    return PluginLlm(plugin_id=HOST_PLUGIN_ID).complete


class HermesBackend:
    """The host's own model, through Hermes' plugin LLM facade."""

    name = "hermes"

    def __init__(self, config: Config, location: Location, complete: HostComplete | None = None):
        self.config = config
        self.location = location
        self._complete = complete
        self.model = "hermes-host-model"

    def complete(self, messages: list[dict], max_tokens: int | None = None) -> Completion:
        fn = self._complete or registered_host_llm(self.location.profile) or hermes_facade(self.location)
        start = time.monotonic()
        try:
            result = fn(redact_messages(messages), temperature=self.config.extract_temperature,
                        max_tokens=max_tokens or self.config.extract_max_tokens,
                        timeout=self.config.extract_timeout, purpose="automem memory extraction")
        except LLMError:
            raise
        except Exception as exc:
            raise classify_host_error(exc) from None
        latency_ms = (time.monotonic() - start) * 1000
        if isinstance(result, str):
            return Completion(text=result, latency_ms=latency_ms, model=self.model)
        usage = getattr(result, "usage", None)
        return Completion(text=str(getattr(result, "text", "") or ""),
                          prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                          completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
                          latency_ms=latency_ms, model=str(getattr(result, "model", "") or self.model))


def classify_host_error(exc: BaseException) -> LLMError:
    """Hermes raises the provider client's errors (and PermissionError from its trust gate)."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, PermissionError):
        return llm_error(f"Hermes refused automem's model call ({_short(exc)})", False)
    if isinstance(status, int) and status in (401, 403, 404):
        return llm_error(f"the host model refused the call (HTTP {status}, {_short(exc)}); check the profile's "
                         f"model settings, or set automem.extract_backend: openai or rules", False)
    retry_after = None
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        try:
            retry_after = parse_retry_after(headers.get("retry-after"))
        except Exception:
            retry_after = None
    return llm_error(f"the host model call failed ({_short(exc)})", True, retry_after)


# -- choosing ------------------------------------------------------------------------------------------------
class RulesBackend:
    """No model: the offline extractor of explicit statements."""

    name = "rules"
    model = "rules"


Backend = Any  # OpenAIBackend | HermesBackend | RulesBackend


def choose_backend(config: Config, location: Location, origin: str = "cli",
                   host_complete: HostComplete | None = None) -> Backend:
    """The backend for one job. `origin` is where the job came from ("hermes" for the Hermes adapter)."""
    name = config.extract_backend
    if name == "openai":
        return OpenAIBackend(config)
    if name == "hermes":
        return HermesBackend(config, location, host_complete)
    if name == "rules":
        return RulesBackend()
    # auto
    if config.resolved_extract_api_key:
        return OpenAIBackend(config)
    if host_complete is not None or registered_host_llm(location.profile) is not None:
        return HermesBackend(config, location, host_complete)
    if origin == "hermes" and hermes_importable():
        current = os.environ.get("HERMES_HOME")
        if not current or _same_path(current, str(location.profile_home)):
            return HermesBackend(config, location)
    return RulesBackend()
