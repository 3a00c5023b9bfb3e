"""What `hermes memory status` shows of automem (the provider's `get_status_config`).

Settings, memories per wing (the profile's own and the shared ones of other profiles), the spool, the last
extraction and the store. Everything comes from small files: config.yaml, the recall index (SQLite, read-only), the
spool folders and the tail of automem.log. Nothing here imports chromadb or the embedding model, and nothing is
written (but an unreadable job file goes to dead/, as with every reader of the spool).
"""

from __future__ import annotations

import json
import os
import time

from ..config import Config, load_config
from ..core import index, sync
from ..core.memory import WINGS
from ..core.recall import store_generation
from ..errors import AutomemError
from ..extract.spool import spool_stats
from ..paths import Location

LOG_TAIL_BYTES = 256 * 1024  # the last extraction is near the end; a long log is not read whole


def status_config(hermes_home: str | os.PathLike | None) -> dict:
    """{label: text} for `hermes memory status`, in the order shown. Never raises: a broken config is one line."""
    loc = Location.resolve(hermes_home)
    try:
        cfg = load_config(loc)
    except AutomemError as exc:
        return {"config": f"broken: {exc}", "fix": "correct the `automem:` section, then `automem doctor`"}
    out = {"profile": f"{loc.profile} (root {loc.root})"}
    out.update(describe_backend(cfg))
    out["auto extract"] = "on" if cfg.auto_extract else "off (sessions are not extracted)"
    out["user scope"] = cfg.user_scope
    out["shared wings"] = ", ".join(cfg.shared_wings) or "none"
    out.update(describe_memories(loc, cfg, memory_counts(loc, cfg)))
    out.update(describe_spool(loc))
    out["last extraction"] = describe_job(last_job(loc))
    out["store"] = (f"Chroma server {cfg.chroma_url} ({cfg.chroma_tenant}/{cfg.chroma_database})" if cfg.chroma_url
                    else f"{loc.chroma_dir} (embedded ChromaDB)")
    if cfg.chroma_url:
        out["server sync"] = describe_sync(sync.staleness(loc, cfg), cfg)
    return out


def describe_sync(state: dict, cfg: Config) -> str:
    """How current this machine's copy of the server's memories is (what sessions answer from)."""
    age = state.get("age_s")
    if age is None:
        text = "never synced (no local index yet)"
    else:
        when = time.strftime("%H:%M:%S", time.localtime(state["synced_at"]))
        text = f"{_age(age)} ago (at {when}); synced every {cfg.server_sync_s:g} s while sessions or the resident run"
    if state.get("error"):
        since = state.get("failing_since") or 0
        how_long = f" for {_age(time.time() - since)}" if since else ""
        text += (f"; the server has not answered{how_long}: {state['error']} (sessions answer from the local index, "
                 f"{_age(age) + ' old' if age is not None else 'empty'})")
    return text


def describe_backend(cfg: Config) -> dict:
    key = "set" if cfg.resolved_extract_api_key else "not set"
    where = f"{cfg.extract_model} at {cfg.extract_base_url}, API key {key}"
    if cfg.extract_backend == "openai":
        return {"backend": "openai", "model": where}
    if cfg.extract_backend == "auto":
        if cfg.resolved_extract_api_key:
            return {"backend": "auto: openai (a key is set)", "model": where}
        return {"backend": "auto: Hermes' own model (no key set; offline rules outside Hermes)",
                "model": "the host's model"}
    if cfg.extract_backend == "hermes":
        return {"backend": "hermes", "model": "the host's model"}
    return {"backend": "rules (offline)", "model": "none"}


# -- memories ------------------------------------------------------------------------------------------------------
def memory_counts(loc: Location, cfg: Config) -> dict | None:
    """{"owner": {profile: {wing: n}}, "others": {profile: {"memories": n, "scopes": k}}, "capped", "fresh",
    "built_at"} from the recall index; None when there is none yet."""
    stamp, built_at = index.stamp_of(loc)
    if not stamp:
        return None
    counts = index.counts(loc)
    gen = store_generation(loc, cfg)
    if gen is None:  # a server's index: as of its last sync
        built_at = index.synced_at(index.meta_of(loc))
    return {"owner": counts["owner"], "others": counts["others"], "capped": False,
            "fresh": index.is_fresh(loc, gen, max_age=cfg.server_sync_s), "built_at": built_at,
            "waiting": index.count_waiting(loc)}


def describe_memories(loc: Location, cfg: Config, snap: dict | None) -> dict:
    """The owner's view (what `hermes chat` of this profile recalls from): its own memories, the shared wings of
    other profiles; and how many memories gateway users and chats of this profile have (numbers only)."""
    if snap is None:
        return {"memories": "none yet (no recall index: nothing was stored, or no session ran since)"}
    owner = snap["owner"]
    plus = "+" if snap["capped"] else ""
    own = owner.get(loc.profile, {})
    out = {"memories (own)": ", ".join(f"{w} {own.get(w, 0)}{plus}" for w in WINGS)}
    others = {p: wings for p, wings in owner.items() if p != loc.profile}
    shared = {w: sum(int(wings.get(w, 0)) for wings in others.values()) for w in cfg.shared_wings}
    shared_text = ", ".join(f"{w} {n}{plus}" for w, n in shared.items()) or "no shared wings"
    sources = sorted(p for p, wings in others.items() if any(wings.get(w) for w in cfg.shared_wings))
    out["memories (shared)"] = shared_text + (f" (from {', '.join(sources)})" if sources else "")
    people = snap["others"].get(loc.profile)
    if people:
        out["memories of gateway users"] = (f"{people['memories']} in {people['scopes']} "
                                            f"user or chat scope{'s' if people['scopes'] != 1 else ''} "
                                            f"(each sees only its own)")
    waiting = int(snap.get("waiting", {}).get(loc.profile, 0))
    out["waiting for a judge"] = (f"{waiting} pair{'s' if waiting != 1 else ''} kept apart for lack of a judge (the "
                                  f"next sessions that ask one settle {cfg.dedup_settle_pairs} each; `automem compact "
                                  f"--judge` settles all)" if waiting else "none")
    if not snap["fresh"]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(snap["built_at"])) if snap["built_at"] else "?"
        out["memories as of"] = f"{when} (writes since then are counted at the next recall)"
    return out


# -- the spool and the log ----------------------------------------------------------------------------------------
def describe_spool(loc: Location) -> dict:
    stats = spool_stats(loc)
    pending = stats["spool_depth"]
    text = f"{pending} pending"
    if pending:
        text += f" ({stats['spool_due']} due, the oldest for {_age(stats['spool_oldest_age_s'])})"
    dead = stats["dead_jobs"]
    dead_text = str(dead) if not dead else \
        f"{dead} (fix the cause, then `automem drain --retry-dead`; last: {stats['dead_last_errors'][-1]})"
    if stats.get("waiting_for_server"):
        text += (f"; {stats['waiting_for_server']} waiting for the Chroma server (retried as soon as it answers)"
                 + (f", {stats['queued_adds']} of them `automem add`" if stats.get("queued_adds") else ""))
    return {"spool": text, "dead jobs": dead_text}


def last_job(loc: Location, tail_bytes: int = LOG_TAIL_BYTES) -> dict | None:
    """The newest `job` record of this profile in automem.log (of any profile when it has none)."""
    try:
        with open(loc.log_file, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - tail_bytes))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    fallback = None
    for line in reversed(lines):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("event") != "job":
            continue
        if rec.get("job_profile", rec.get("profile")) == loc.profile:
            return rec
        fallback = fallback or rec
    return fallback


def describe_job(rec: dict | None) -> str:
    if rec is None:
        return "none yet"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(rec.get("ts") or 0)))
    status = rec.get("status", "?")
    who = f" ({rec['job_profile']})" if rec.get("job_profile") else ""
    if status == "done":
        decisions = [d.get("decision") for d in rec.get("decisions") or [] if isinstance(d, dict)]
        tally = ", ".join(f"{decisions.count(d)} {d}" for d in ("new", "update", "duplicate", "held", "rejected")
                          if decisions.count(d))
        n = len(rec.get("candidates") or [])
        how = f"{rec.get('backend', '?')}" + (f" {rec['model']}" if rec.get("model") else "")
        return (f"{when}{who} done: {n} candidate{'' if n == 1 else 's'}" + (f" → {tally}" if tally else "")
                + f" ({how})")
    error = str(rec.get("error") or "")[:160]
    if status == "retry":
        return f"{when}{who} failed, retry in {_age(float(rec.get('retry_in_s') or 0))}: {error}"
    return f"{when}{who} {status}: {error}"


def _age(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
