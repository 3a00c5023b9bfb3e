"""The session-end extraction pipeline: spool -> prepare -> P2 -> P0 -> parse -> P1 (the write path).

- `enqueue()` is what a hook spends: prepare the transcript (pure, milliseconds) and write one job file. It never
  raises; a failure is logged with what was lost.
- `process_job()` runs one job: P2 (known memories: the visible memories most similar to the transcript plus the
  newest, wings user + instruction, within the seed's budget) -> P0 (the backend: an LLM with the seed's prompt,
  or the offline rules) -> tolerant parse -> P1 (`write_path.remember`; with an LLM, borderline pairs are settled
  by one batched judge call).
- `extract_now()` runs the pipeline on a transcript at once (the CLI's `automem extract`), through the spool, so a
  failed LLM call leaves the job there for a retry instead of losing it.
- `drain()`, `spawn_detached_drainer()`, `start_background_drainer()`: the drainers of `automem.extract.drainer`,
  wired to `process_job`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..config import Config, load_config
from ..core.identity import OWNER_IDENTITY, Identity
from ..core.memory import WING_OF_CATEGORY
from ..core.provenance import OWNER_SPEAKER, Evidence, excerpt_of, source_turn, speaker_for
from ..errors import AutomemError
from ..log import log_event
from ..paths import Location
from .drainer import (
    BackgroundDrainer,
    DrainReport,
    drain as _drain,
    drain_single,
    process_one,
    spawn_detached_drainer as _spawn,
)
from .parse import Item
from .prompt import build_judge_messages, build_messages, known_context
from .spool import Job, enqueue_job, is_done, job_id, job_path, write_atomic
from .transcript import Transcript, prepare_with

KNOWN_WINGS = ("user", "instruction")
KNOWN_QUERY_MESSAGES = 8  # P2 looks up neighbours of this many of the newest user messages
KNOWN_NEIGHBOURS = 5
JUDGE_MIN_TOKENS = 32  # the judge answers one short word per pair
JUDGE_TOKENS_PER_PAIR = 8
ANSWER_PREVIEW_CHARS = 300
TRUNCATED = "the answer was cut off"  # how a job whose extraction answer ended mid-JSON is retried
MAX_TOKEN_DOUBLINGS = 2  # each retry after a cut-off answer doubles max_tokens, up to 4x extract_max_tokens


# -- enqueue (the hook's cost) ---------------------------------------------------------------------------------
def make_jobs(messages: Sequence[Any], location: Location, config: Config, *, session_id: str = "",
              task_id: str = "", origin: str = "hermes", identity: Identity = OWNER_IDENTITY) -> list[Job]:
    """One job per window of the transcript ([] when the seed's rules say there is nothing to extract)."""
    who = {} if identity == OWNER_IDENTITY else identity.to_json()
    jobs = []
    for transcript in prepare_with(messages, config):
        data = transcript.to_json()
        jobs.append(Job(id=job_id(location.profile, session_id, data, who), profile=location.profile,
                        transcript=data, session_id=session_id, task_id=task_id, origin=origin,
                        created_at=time.time(), identity=who))
    return jobs


def make_job(messages: Sequence[Any], location: Location, config: Config, **kwargs) -> Job | None:
    """The job for a transcript short enough to be one window (the last window otherwise), or None."""
    jobs = make_jobs(messages, location, config, **kwargs)
    return jobs[-1] if jobs else None


def _origin_of(source: str) -> str:
    return "cli" if source in ("cli", "extract") else "hermes"


def enqueue_windows(location: Location, messages: Sequence[Any], *, session_id: str = "", task_id: str = "",
                    source: str = "hermes", config: Config | None = None, origin: str | None = None,
                    identity: Identity = OWNER_IDENTITY) -> list[str]:
    """Write the extraction jobs of these messages to the spool, one per window (idempotent per profile +
    session + content + person). Returns the job ids ([] when there is too little to extract).
    Never raises: this runs inside Hermes' hooks."""
    try:
        config = config or load_config(location)
        jobs = make_jobs(messages, location, config, session_id=session_id, task_id=task_id,
                         origin=origin or _origin_of(source), identity=identity)
        if not jobs:
            log_event(location, "job_skipped", session_id=session_id, source=source,
                      reason=f"fewer than {config.transcript_min_messages} user/assistant messages")
            return []
        for job in jobs:
            created = enqueue_job(location, job)
            log_event(location, "job_enqueued", job=job.id, session_id=session_id, source=source, new=created,
                      messages=len(job.transcript), windows=len(jobs), scope=identity.why)
        return [job.id for job in jobs]
    except Exception as exc:  # noqa: BLE001 - never a traceback into Hermes; say what was not saved
        log_event(location, "enqueue_failed", session_id=session_id, source=source,
                  error=f"{exc.__class__.__name__}: {exc}", messages=len(messages or []))
        return []


def enqueue(location: Location, messages: Sequence[Any], **kwargs) -> str | None:
    """`enqueue_windows` for callers that want one id: the last window's job (None when nothing to extract)."""
    ids = enqueue_windows(location, messages, **kwargs)
    return ids[-1] if ids else None


# -- P2 ----------------------------------------------------------------------------------------------------------
def known_memories(store: Any, transcript: Transcript, profile: str, config: Config,
                   scopes: Sequence[str] = ("",)) -> list[str]:
    """The memories the model is told it already knows: the visible user/instruction memories most similar to the
    newest user messages, then the newest ones, within known_max_items / known_max_chars."""
    queries = transcript.user_texts()[-KNOWN_QUERY_MESSAGES:] or [transcript.text[-1000:]]
    ranked: dict[str, tuple[float, str]] = {}
    try:
        vectors = store.embed(queries)
        for vec in vectors:
            for mem, dist in store.search(embedding=vec, k=KNOWN_NEIGHBOURS, profile=profile, wings=KNOWN_WINGS,
                                          scopes=scopes):
                if mem.id not in ranked or dist < ranked[mem.id][0]:
                    ranked[mem.id] = (dist, mem.text)
        similar = [text for _, text in sorted(ranked.values())]
        newest = [m.text for m in store.list(profile=profile, wings=KNOWN_WINGS, limit=config.known_max_items,
                                             scopes=scopes)]
    except AutomemError:
        raise
    except Exception as exc:  # an empty or new store: nothing known yet
        log_event(store.location, "known_memories_failed", error=f"{exc.__class__.__name__}: {exc}")
        return []
    out: list[str] = []
    for text in similar + newest:
        if text not in out:
            out.append(text)
    return out


# -- P0 + parse --------------------------------------------------------------------------------------------------
def extract_candidates(transcript: Transcript, known: list[str], backend: Any, config: Config,
                       details: dict, max_tokens: int | None = None) -> list[Item]:
    """The memories the backend found (category, text, and the turn each came from). Records tokens, latency and
    parse notes in `details`."""
    from .parse import parse_extraction
    from .rules import classify, extract_statements

    details["backend"] = backend.name
    if backend.name == "rules":
        start = time.monotonic()
        users = [(n, text) for n, (role, text) in enumerate(transcript.messages, 1) if role == "user"]
        result = extract_statements([t for _, t in users], turns=[n for n, _ in users])
        details["latency_ms"] = round((time.monotonic() - start) * 1000, 2)
        details.setdefault("prompt_tokens", 0)
        details.setdefault("completion_tokens", 0)
    else:
        known_text = known_context(known, config.known_max_items, config.known_max_chars)
        details["known"] = len(known_text.split("；")) if known_text else 0
        completion = backend.complete(build_messages(transcript.numbered, known_text), max_tokens=max_tokens)
        details["model"] = completion.model
        details["prompt_tokens"] = details.get("prompt_tokens", 0) + completion.prompt_tokens
        details["completion_tokens"] = details.get("completion_tokens", 0) + completion.completion_tokens
        details["latency_ms"] = round(completion.latency_ms, 1)
        details["finish_reason"] = completion.finish_reason
        details["answer_preview"] = completion.text[:ANSWER_PREVIEW_CHARS]
        result = parse_extraction(completion.text, classify=classify, finish_reason=completion.finish_reason)
    if result.notes:
        details["parse_notes"] = result.notes
    if result.truncated:
        details["truncated"] = True
    details["candidates"] = [{"category": i.category, "text": i.text} for i in result.items]
    return result.items


def evidence_for(item: Item, transcript: Transcript, user_speaker: str, extractor: str) -> Evidence:
    """Where one extracted memory came from: the turn it named (or the one it shares most with; an assistant's
    echo gives way to the user's words, see automem.core.provenance.source_turn), that turn's role and speaker,
    and its excerpt (the rules' exact sentence, else the part of the turn the memory shares most with)."""
    turn = source_turn(transcript.messages, item.text, item.turn)
    if not turn:
        return Evidence(origin="extraction", extractor=extractor)
    role, text = transcript.messages[turn - 1]
    excerpt = item.source if item.source and item.source in text else excerpt_of(text, item.text)
    return Evidence(excerpt=excerpt, speaker=speaker_for(role, user_speaker), role=role, turn=turn,
                    origin="extraction", extractor=extractor)


def extractor_name(backend: Any, details: dict) -> str:
    """"rules", or "<backend>:<model>" ("openai:glm-4-flash")."""
    model = details.get("model") or getattr(backend, "model", "") or ""
    return backend.name if backend.name == "rules" or not model else f"{backend.name}:{model}"


def make_judge(backend: Any, details: dict, config: Config | None = None):
    """A write-path judge backed by one batched LLM call per write (None for the rules backend, or when
    `dedup_judge` is off). Its calls, pairs and tokens are added to `details`."""
    if backend is None or backend.name == "rules" or (config is not None and not config.dedup_judge):
        return None
    from .parse import parse_judge

    def judge(pairs: list[tuple]) -> list[str]:
        max_tokens = JUDGE_MIN_TOKENS + JUDGE_TOKENS_PER_PAIR * len(pairs)
        try:
            completion = backend.complete(build_judge_messages(pairs), max_tokens=max_tokens)
        except Exception as exc:
            details["judge_error"] = str(exc) if isinstance(exc, AutomemError) else f"{exc.__class__.__name__}: {exc}"
            raise
        details["prompt_tokens"] = details.get("prompt_tokens", 0) + completion.prompt_tokens
        details["completion_tokens"] = details.get("completion_tokens", 0) + completion.completion_tokens
        details["judge_calls"] = details.get("judge_calls", 0) + 1
        details["judge_pairs"] = details.get("judge_pairs", 0) + len(pairs)
        details["judge_prompt_tokens"] = details.get("judge_prompt_tokens", 0) + completion.prompt_tokens
        details["judge_completion_tokens"] = details.get("judge_completion_tokens", 0) + completion.completion_tokens
        details["judge_latency_ms"] = round(completion.latency_ms, 1)
        return parse_judge(completion.text, len(pairs))

    return judge


BACKGROUND_SETTLE_EVERY_S = 3600.0  # at most one judge call of its own per profile and hour, only while pairs wait


def background_settle(store: Any, judge: Any, profile: str, scopes: Sequence[str], details: dict,
                      now: float | None = None) -> int:
    """The background half of convergence: a job whose write asked the judge nothing (its candidates needed no
    judge, so no pair kept apart earlier could ride along in its call) puts up to `dedup_settle_pairs` waiting pairs
    to the judge itself, at most once per profile every BACKGROUND_SETTLE_EVERY_S, and only while pairs wait. So a
    store written offline converges even when no later session happens to ask the judge anything. Returns how
    many pairs were settled; never raises (the pairs wait for the next chance)."""
    from ..core.write_path import settle_waiting, waiting_pairs

    now = time.time() if now is None else now
    stamp = store.location.automem_dir / "settled-at.json"
    try:
        seen = json.loads(stamp.read_text(encoding="utf-8"))
        seen = seen if isinstance(seen, dict) else {}
    except (OSError, ValueError):
        seen = {}
    try:
        if now - float(seen.get(profile, 0) or 0) < BACKGROUND_SETTLE_EVERY_S:
            return 0
        if not waiting_pairs(store, profile, scopes, limit=1):
            return 0
        seen[profile] = now
        write_atomic(stamp, seen)
        settled = settle_waiting(store, judge, profile, scopes)
    except Exception as exc:  # noqa: BLE001 - the job itself is done; the pairs wait
        details["settle_error"] = f"{exc.__class__.__name__}: {exc}"
        return 0
    details["settled"] = len(settled)
    return len(settled)


def judge_for(location: Location, config: Config, origin: str = "cli", details: dict | None = None):
    """The judge for a write outside extraction (`automem add`, the agent's `automem_remember`): the backend
    extraction would use, when it is an LLM; None for the offline rules."""
    if not config.dedup_judge:
        return None
    from .llm import choose_backend, registered_host_llm

    backend = choose_backend(config, location, origin)
    if backend.name == "hermes" and origin != "hermes" and registered_host_llm(location.profile) is None:
        return None  # the host's model is reachable from inside a Hermes session only
    return make_judge(backend, {} if details is None else details, config)


def in_user_words(backend: str, wing: str, text: str, user_texts: Sequence[str],
                  role: str | None = None) -> bool | None:
    """Whether an extracted instruction is the user's own words (automem.core.instructions.supported): the rules
    read user turns only (quotations left out), so theirs are; an LLM's must be found in a user turn. Its source
    turn's `role` (automem.core.provenance.source_turn) settles "no" when it is an assistant's or a tool's turn;
    a user turn is the model's claim (a tool output can tell it which turn to name), so the words must still be
    found in the user's messages. None for the other wings (nothing is shared from them)."""
    if wing != "instruction":
        return None
    if backend == "rules":
        return True
    from ..core.instructions import supported

    if role and role != "user":
        return supported(text, user_texts, role)
    return supported(text, user_texts)


# -- memories queued by `automem add` while the server did not answer ----------------------------------------------
_CANDIDATE_FIELDS = ("text", "wing", "profile", "room", "scope", "added_by", "session_id", "task_id")


def queue_adds(location: Location, candidates: Sequence[Any], *, judge: bool = True) -> str:
    """Put memories the store could not take now (the Chroma server did not answer) in the spool, as one job that
    every drainer retries until the server answers (`automem.extract.drainer`). Returns the job id."""
    from .spool import add_job_id

    rows = [{f: getattr(c, f) for f in _CANDIDATE_FIELDS} for c in candidates]
    at = time.time()
    job = Job(id=add_job_id(rows, at), profile=candidates[0].profile if candidates else location.profile,
              transcript=[], origin="cli" if judge else "cli-no-judge", kind="add", candidates=rows, created_at=at)
    enqueue_job(location, job)
    log_event(location, "add_queued", job=job.id, memories=len(rows))
    return job.id


def candidates_of(job: Job) -> list:
    """The write path's candidates of a queued `add` job."""
    from ..core.write_path import Candidate

    out = []
    for row in job.candidates:
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise AutomemError(f"job {job.id}: a queued memory without text")
        cand = Candidate(**{f: str(row[f]) for f in _CANDIDATE_FIELDS if f in row})
        # typed in by the owner (or for a person, `--user`): the words are the memory itself
        cand.evidence = Evidence(speaker=cand.scope or OWNER_SPEAKER, role="user", origin="cli")
        out.append(cand)
    return out


# -- P1 and one job ------------------------------------------------------------------------------------------
class Pipeline:
    """What the drainer needs across jobs: the store (opened once), the configs and backends per profile."""

    def __init__(self, location: Location, config: Config | None = None, store: Any = None,
                 backend: Any = None):
        self.location = location
        self.config = config or load_config(location)
        self._store = store
        self._own_store = store is None
        self._backend = backend
        self._configs: dict[str, Config] = {location.profile: self.config}
        self._lock = threading.Lock()

    @property
    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                from ..core.store import open_store

                self._store = open_store(self.location, self.config)
            return self._store

    def config_for(self, profile: str) -> Config:
        if profile not in self._configs:
            self._configs[profile] = load_config(Location(self.location.root, profile))
        return self._configs[profile]

    def backend_for(self, job: Job) -> Any:
        if self._backend is not None:
            return self._backend
        from .llm import choose_backend

        return choose_backend(self.config_for(job.profile), Location(self.location.root, job.profile), job.origin)

    def process(self, job: Job, details: dict) -> list:
        """Run one job; raises on failure (the spool records it and backs off)."""
        from ..core.write_path import Candidate, remember

        if job.kind == "add":
            return self.process_add(job, details)
        config = self.config_for(job.profile)
        transcript = Transcript.from_json(job.transcript)
        backend = self.backend_for(job)
        store = self.store
        start = time.monotonic()
        identity = Identity.from_json(job.identity)
        known = (known_memories(store, transcript, job.profile, config, identity.reads)
                 if backend.name != "rules" else [])
        details["p2_ms"] = round((time.monotonic() - start) * 1000, 1)
        cut_before = sum(1 for _, error in job.errors if str(error).startswith(TRUNCATED))
        max_tokens = config.extract_max_tokens * 2 ** min(cut_before, MAX_TOKEN_DOUBLINGS)
        pairs = extract_candidates(transcript, known, backend, config, details, max_tokens=max_tokens)
        extractor = extractor_name(backend, details)
        user_speaker = identity.scope_for("user") or OWNER_SPEAKER
        candidates = []
        user_texts = transcript.user_texts()
        for item in pairs:
            wing = WING_OF_CATEGORY.get(item.category, "user")
            evidence = evidence_for(item, transcript, user_speaker, extractor)
            candidates.append(Candidate(text=item.text, wing=wing, profile=job.profile, scope=identity.scope_for(wing),
                                        room="auto-extract", added_by="auto-extract", session_id=job.session_id,
                                        task_id=job.task_id, job=job.id, writes=dict(identity.writes),
                                        in_user_words=in_user_words(backend.name, wing, item.text, user_texts,
                                                                    evidence.role or None),
                                        queued_at=job.created_at, evidence=evidence))
        judge = make_judge(backend, details, config)
        decisions = remember(store, candidates, judge=judge) if candidates else []
        details["decisions"] = [d.to_json() for d in decisions]
        if judge is not None and not details.get("judge_calls"):
            settle_now = {identity.scope_for(w) for w in ("user", "instruction", "episodic")}
            background_settle(store, judge, job.profile, sorted(settle_now), details)
        if details.get("truncated"):
            # The complete memories are stored; the job runs again for the rest (P2 now lists what was stored,
            # and deterministic ids plus the write path keep the repeated ones from being added twice).
            from .llm import llm_error

            next_max_tokens = config.extract_max_tokens * 2 ** min(cut_before + 1, MAX_TOKEN_DOUBLINGS)
            raise llm_error(f"{TRUNCATED} after {len(pairs)} memories (stored); extracting again for the rest "
                            f"with max_tokens {next_max_tokens}", True, retry_after=0.0)
        return decisions

    def process_add(self, job: Job, details: dict) -> list:
        """Memories `automem add` queued while the Chroma server did not answer: through the write path now, as the
        command would have written them (the judge its config chooses, when it asked for one)."""
        from ..core.write_path import remember

        cands = candidates_of(job)
        config = self.config_for(job.profile)
        judge = judge_for(Location(self.location.root, job.profile), config, origin="cli", details=details) \
            if job.origin != "cli-no-judge" else None
        decisions = remember(self.store, cands, judge=judge)
        details["decisions"] = [d.to_json() for d in decisions]
        return decisions

    def close(self) -> None:
        if self._own_store and self._store is not None:
            self._store.close()
            self._store = None


@dataclass
class ExtractResult:
    job_id: str | None
    status: str  # done | retry | dead | skipped
    decisions: list = field(default_factory=list)
    details: dict = field(default_factory=dict)
    error: str = ""


def extract_now(location: Location, messages: Sequence[Any], *, config: Config | None = None,
                session_id: str = "", task_id: str = "", origin: str = "cli", store: Any = None,
                backend: Any = None, identity: Identity = OWNER_IDENTITY) -> ExtractResult:
    """Run the whole pipeline on `messages` now, through the spool (even when this content was extracted before:
    an explicit request runs again, and the write path keeps it from adding copies). A transcript longer than
    one window is several jobs, run in order; the result sums them."""
    config = config or load_config(location)
    jobs = make_jobs(messages, location, config, session_id=session_id, task_id=task_id, origin=origin,
                     identity=identity)
    if not jobs:
        return ExtractResult(None, "skipped", error=f"fewer than {config.transcript_min_messages} user/assistant "
                                                    f"messages with text: nothing to extract")
    from ..core.erase import jobs_lock, prune_guard
    from .spool import ensure_spool, read_job

    ensure_spool(location)
    pipeline = Pipeline(location, config, store=store, backend=backend)
    report = DrainReport()
    statuses: list[str] = []
    try:
        for job in jobs:
            existing = job_path(location, job.id)
            if not existing.exists():
                if is_done(location, job.id):
                    (location.spool_dir / ".done" / job.id).unlink(missing_ok=True)
                if not enqueue_job(location, job):  # a dead job of the same content: run it again, fresh
                    write_atomic(existing, job.to_json())
            else:  # pending (maybe backing off): run it now
                with jobs_lock(location):
                    pending = read_job(existing) or job
                    pending.attempts, pending.next_attempt_at = 0, 0.0
                    write_atomic(existing, pending.to_json())
            status = process_one(location, config, job, pipeline.process, report=report)
            # An answer cut off mid-JSON stored its complete memories and asks for another attempt: run it now.
            retries = 0
            while (status == "retry" and retries < MAX_TOKEN_DOUBLINGS
                   and str(report.jobs[-1].get("error", "")).startswith(TRUNCATED)):
                retries += 1
                status = process_one(location, config, job, pipeline.process, report=report)
            statuses.append(status)
    finally:
        pipeline.close()
        prune_guard(location)
    records = report.jobs
    details = dict(records[-1]) if records else {}
    if len(records) > 1:
        details["windows"] = len(jobs)
        for key in ("prompt_tokens", "completion_tokens"):
            details[key] = sum(int(r.get(key) or 0) for r in records)
        details["candidates"] = [c for r in records for c in (r.get("candidates") or [])]
    decisions: list = []
    for record in records:  # each memory as first decided (a retry finds the stored ones duplicates)
        for d in record.get("decisions") or []:
            if not any((d.get("text"), d.get("wing")) == (e.get("text"), e.get("wing")) for e in decisions):
                decisions.append(d)
    status = next((s for s in ("dead", "retry", "locked") if s in statuses), "done")
    error = next((r.get("error") for r in records if r.get("error")), "") if status != "done" else ""
    if status == "locked":
        error = error or "another drainer is processing this job right now"
    return ExtractResult(jobs[-1].id, status, decisions, details, error)


# -- drainers ------------------------------------------------------------------------------------------------
def drain(location: Location, config: Config | None = None, *, retry_dead: bool = False, profile: str | None = None,
          wait_seconds: float = 0.0, single: bool = False, store: Any = None, backend: Any = None,
          max_jobs: int | None = None) -> DrainReport | None:
    """Process the spool's due jobs now. With `single`, None when another single drainer already runs."""
    config = config or load_config(location)
    from .progress import prune

    prune(location)  # sessions not heard of for 90 days: their progress files go
    pipeline = Pipeline(location, config, store=store, backend=backend)
    try:
        kwargs = dict(retry_dead=retry_dead, profile=profile, wait_seconds=wait_seconds, max_jobs=max_jobs)
        if single:
            return drain_single(location, config, pipeline.process, **kwargs)
        return _drain(location, config, pipeline.process, **kwargs)
    finally:
        pipeline.close()


def spawn_detached_drainer(location: Location, **kwargs) -> int | None:
    """A drainer process that outlives this one (for one-shot `hermes chat -q`); None when one already runs."""
    try:
        return _spawn(location, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the job is in the spool; the next drainer will take it
        log_event(location, "drainer_spawn_failed", error=f"{exc.__class__.__name__}: {exc}")
        return None


_background: dict[str, tuple[BackgroundDrainer, Pipeline]] = {}
_background_lock = threading.Lock()


def start_background_drainer(location: Location, config: Config | None = None, **kwargs) -> BackgroundDrainer:
    """The drainer thread of this process for `location`'s profile (started once, kicked on every call)."""
    key = f"{location.root}\x1f{location.profile}"
    with _background_lock:
        entry = _background.get(key)
        if entry is None or not entry[0].alive:
            config = config or load_config(location)
            pipeline = Pipeline(location, config, **kwargs)
            drainer = BackgroundDrainer(location, config, pipeline.process, profile=location.profile).start()
            _background[key] = (drainer, pipeline)
            return drainer
    entry[0].kick()
    return entry[0]


def stop_background_drainers(timeout: float = 10.0) -> None:
    with _background_lock:
        entries = list(_background.values())
        _background.clear()
    for drainer, pipeline in entries:
        drainer.stop(timeout)
        pipeline.close()


# -- figures -------------------------------------------------------------------------------------------------
def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return round(ordered[idx], 1)


def extraction_stats(location: Location) -> dict:
    """Spool depth, dead jobs, and the token and latency totals of every logged job (for `automem stats`)."""
    from ..log import read_events
    from .spool import spool_stats

    out = spool_stats(location)
    events = read_events(location, "job")
    by_status: dict[str, int] = {}
    prompt = completion = 0
    latencies: list[float] = []
    for ev in events:
        by_status[ev.get("status", "?")] = by_status.get(ev.get("status", "?"), 0) + 1
        prompt += int(ev.get("prompt_tokens") or 0)
        completion += int(ev.get("completion_tokens") or 0)
        if ev.get("status") == "done" and ev.get("backend") not in (None, "rules") and ev.get("latency_ms"):
            latencies.append(float(ev["latency_ms"]))
    out.update({
        "jobs_logged": by_status,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "llm_latency_ms": {"jobs": len(latencies), "total": round(sum(latencies), 1),
                           "p50": _percentile(latencies, 0.5), "p95": _percentile(latencies, 0.95)},
    })
    return out
