"""`automem install`, `uninstall` and `doctor`: put automem into Hermes profiles, take it out, and check it.

Facts from Hermes 0.19 that shape this (see the project's reference notes):
- Plugins load from `<profile home>/plugins/` only: a plugin in the root is invisible to other profiles, and
  `hermes profile create --clone` copies the config but not `plugins/`. So every profile gets its own copy.
- User plugins are opt-in (`plugins.enabled`); the memory provider is chosen by `memory.provider` (one at a time).
- Hermes imports the plugin in its own interpreter, which must be able to `import automem`.

This module never imports Hermes. It runs the three commands over the profiles asked for; the work is in
`automem.hermes.plugin_files` (the files copied), `automem.hermes.profile_config` (config.yaml edits, backup first),
`automem.hermes.hermes_python` (pip-installing automem into Hermes' Python) and `automem.hermes.doctor` (the checks).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..errors import AutomemError, UsageError
from ..paths import Location, profile_name_problem, resolve_root_and_profile
from ..version import __version__
from .doctor import doctor
from .hermes_python import ensure_interpreter, find_hermes
from .plugin_files import PLUGIN_NAME, Sources, copy_tree, find_sources, list_profiles
from .profile_config import (
    backup,
    change_config,
    config_path,
    fragment_ops,
    install_ops,
    provider_of,
    read_config,
    uninstall_ops,
)


# -- profiles -----------------------------------------------------------------------------------------------------
def target_locations(hermes_home: str | None, profiles: list[str] | None, all_profiles: bool) -> list[Location]:
    root, home_profile = resolve_root_and_profile(hermes_home)
    if all_profiles and profiles:
        raise UsageError("give --profile P ... or --all-profiles, not both")
    names = list_profiles(root) if all_profiles else (profiles or [home_profile])
    seen: list[str] = []
    for name in names:
        problem = profile_name_problem(name)
        if problem:
            raise UsageError(problem)
        if name not in seen:
            seen.append(name)
    return [Location(root, name) for name in seen]


# -- packaged profiles (blog-writer) ------------------------------------------------------------------------------
def create_profile(loc: Location, hermes: str | None) -> str:
    """Create a missing profile: `hermes profile create NAME --clone --no-alias` when Hermes is there, else the
    folder layout with the root's config.yaml and .env copied (what --clone does)."""
    if hermes:
        env = dict(os.environ, HERMES_HOME=str(loc.root))
        res = subprocess.run([hermes, "profile", "create", loc.profile, "--clone", "--no-alias"], capture_output=True,
                             text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
        if res.returncode != 0 or not loc.profile_home.is_dir():
            last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
            raise AutomemError(f"`hermes profile create {loc.profile} --clone --no-alias` failed: {last[0]}")
        return "created with `hermes profile create --clone --no-alias`"
    home = loc.profile_home
    home.mkdir(parents=True, mode=0o700)
    for sub in ("memories", "sessions", "skills", "logs", "plugins", "workspace", "home"):
        (home / sub).mkdir(exist_ok=True)
    for name in ("config.yaml", ".env"):
        if (loc.root / name).is_file():
            shutil.copy2(loc.root / name, home / name)
    return "created (folder layout; `hermes` not on PATH)"


def apply_packaged_profile(loc: Location, packaged: Path, keep_provider: bool = False) -> list[str]:
    notes = []
    soul_src = packaged / "SOUL.md"
    soul = loc.profile_home / "SOUL.md"
    if not soul.is_file() or soul.read_bytes() != soul_src.read_bytes():
        if soul.is_file():
            notes.append(f"SOUL.md backed up to {backup(soul)}")
        shutil.copyfile(soul_src, soul)
        notes.append("SOUL.md written")
    frag = packaged / "config.fragment.yaml"
    if frag.is_file():
        fragment = yaml.safe_load(frag.read_text(encoding="utf-8")) or {}
        ops = [op for op in fragment_ops(fragment) if not (keep_provider and op.path == ("memory", "provider"))]
        change = change_config(config_path(loc), ops)
        if change.changed:
            notes.append("profile config fragment merged")
    return notes


# -- install / uninstall ------------------------------------------------------------------------------------------
@dataclass
class ProfileResult:
    profile: str
    home: str
    steps: list[str] = field(default_factory=list)
    backup: str | None = None
    provider: str = PLUGIN_NAME
    comments_kept: bool = True


def install_profile(loc: Location, sources: Sources, keep_provider: bool = False,
                    hermes: str | None = None) -> ProfileResult:
    result = ProfileResult(loc.profile, str(loc.profile_home))
    packaged = sources.packaged_profile(loc.profile) if loc.profile != "default" else None
    if not loc.profile_home.is_dir():
        if packaged is None:
            raise UsageError(f"profile {loc.profile!r} does not exist under {loc.root}; create it first "
                             f"(`hermes profile create {loc.profile} --clone`)")
        result.steps.append(f"profile {create_profile(loc, hermes)}")
    path = config_path(loc)
    _, data = read_config(path)
    current = provider_of(data)
    if current and current != PLUGIN_NAME and not keep_provider:
        raise UsageError(f"profile {loc.profile!r} uses the memory provider {current!r} and Hermes runs one at a "
                         f"time: keep it with --keep-provider (automem then works through its general hooks), or "
                         f"switch with `hermes -p {loc.profile} memory off` and install again")
    keeping = keep_provider and bool(current) and current != PLUGIN_NAME
    if packaged is not None:
        result.steps += apply_packaged_profile(loc, packaged, keep_provider=keeping)
    if copy_tree(sources.plugin, loc.profile_home / "plugins" / PLUGIN_NAME):
        result.steps.append(f"plugin copied to {loc.profile_home / 'plugins' / PLUGIN_NAME}")
    if copy_tree(sources.skill, loc.profile_home / "skills" / PLUGIN_NAME):
        result.steps.append(f"skill copied to {loc.profile_home / 'skills' / PLUGIN_NAME}")
    _, data = read_config(path)
    change = change_config(path, install_ops(data, keeping))
    if change.changed:
        result.backup, result.comments_kept = change.backup, change.comments_kept
        result.steps.append("config.yaml: plugins.enabled += automem" +
                            ("" if keeping else ", memory.provider = automem") +
                            (f" (backup {change.backup})" if change.backup else "") +
                            ("" if change.comments_kept else "; comments could not be kept, see the backup"))
    result.provider = current if keeping else PLUGIN_NAME
    if not result.steps:
        result.steps.append("already installed")
    return result


def uninstall_profile(loc: Location) -> ProfileResult:
    result = ProfileResult(loc.profile, str(loc.profile_home))
    if not loc.profile_home.is_dir():
        raise UsageError(f"profile {loc.profile!r} does not exist under {loc.root}")
    for sub in ("plugins", "skills"):
        dest = loc.profile_home / sub / PLUGIN_NAME
        if dest.exists():
            shutil.rmtree(dest)
            result.steps.append(f"removed {dest}")
    path = config_path(loc)
    _, data = read_config(path)
    result.provider = provider_of(data)
    change = change_config(path, uninstall_ops(data))
    if change.changed:
        result.backup, result.comments_kept = change.backup, change.comments_kept
        result.steps.append("config.yaml: automem removed from plugins.enabled" +
                            (" and memory.provider" if result.provider == PLUGIN_NAME else "") +
                            (f" (backup {change.backup})" if change.backup else ""))
    if not result.steps:
        result.steps.append("not installed")
    return result


# -- command line --------------------------------------------------------------------------------------------------
def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    """The install / uninstall / doctor subcommands (`--profile` may be given several times here; `common` holds
    --hermes-home, --profile and --json)."""
    multi = argparse.ArgumentParser(add_help=False)
    multi.add_argument("--all-profiles", action="store_true", help="default and every profile under <root>/profiles/")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common, multi])

    p = add("install", "put automem into Hermes profiles: plugin, skill, plugins.enabled, memory.provider")
    p.add_argument("--keep-provider", action="store_true",
                   help="leave another active memory provider in place (automem then uses its general hooks)")
    p.add_argument("--no-pip", action="store_true",
                   help="do not pip-install automem into Hermes' Python; print the command instead")
    p = add("uninstall", "take automem out of Hermes profiles (the memory store is kept)")
    p = add("doctor", "check everything an install needs, with a fix for each failure")
    p.add_argument("--check-llm", action="store_true", help="also send one tiny request to the extraction LLM")


def _emit(args, obj: dict, human: str) -> None:
    print(json.dumps(obj, ensure_ascii=False) if args.json else human)


def run_install(args) -> int:
    sources = find_sources()
    locations = target_locations(args.hermes_home, args.profile, args.all_profiles)
    hermes = find_hermes()
    results = []
    for loc in locations:
        res = install_profile(loc, sources, keep_provider=args.keep_provider, hermes=hermes)
        results.append(res)
        _emit(args, {"profile": res.profile, **asdict(res)},
              f"profile {res.profile} ({res.home}):\n" + "\n".join(f"  {s}" for s in res.steps))
    status = ensure_interpreter(sources, no_pip=args.no_pip)
    cmd = " ".join(status.command)
    human = {
        "ok": f"hermes interpreter: {status.python} imports automem {__version__}",
        "installed": f"hermes interpreter: installed automem into {status.python} ({cmd})",
        "needs-pip": f"hermes interpreter: {status.python} cannot import automem {__version__} yet; run:\n  {cmd}",
        "no-hermes": f"hermes interpreter: {status.detail}",
        "unknown-interpreter": f"hermes interpreter: {status.detail}",
        "pip-failed": f"hermes interpreter: `{cmd}` failed: {status.detail}",
    }[status.action]
    _emit(args, {"interpreter": asdict(status)}, human)
    if any(r.provider != PLUGIN_NAME for r in results):
        _emit(args, {"note": "fallback"}, "note: another memory provider stays active; automem extracts through "
                                          "its general hooks and recall is available through its tools")
    return 1 if status.action == "pip-failed" else 0


def run_uninstall(args) -> int:
    for loc in target_locations(args.hermes_home, args.profile, args.all_profiles):
        res = uninstall_profile(loc)
        _emit(args, asdict(res), f"profile {res.profile} ({res.home}):\n" + "\n".join(f"  {s}" for s in res.steps))
    root = target_locations(args.hermes_home, None, False)[0].automem_dir
    _emit(args, {"store_kept": str(root)}, f"the memory store is kept in {root} (delete it yourself if you want)")
    return 0


def run_doctor(args) -> int:
    checks = doctor(target_locations(args.hermes_home, args.profile, args.all_profiles), check_llm=args.check_llm)
    mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
    for c in checks:
        _emit(args, asdict(c), f"{mark[c.status]} {c.name}: {c.detail}" + (f"\n     fix: {c.fix}" if c.fix and
                                                                             c.status in ("warn", "fail") else ""))
    failed = [c for c in checks if c.status == "fail"]
    if not args.json:
        print(f"{len(failed)} failed, {sum(c.status == 'warn' for c in checks)} warnings, "
              f"{sum(c.status == 'ok' for c in checks)} ok")
    return 1 if failed else 0

