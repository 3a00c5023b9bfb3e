"""A Hermes profile's config.yaml as automem changes it: read it (a one-line error for broken YAML), back it up,
apply minimal text edits, and the edits install and uninstall make.

Minimal text edits (comments kept, see `automem.hermes.yaml_edit`) after writing a timestamped backup, and no other
key touched. User plugins are opt-in (`plugins.enabled`); the memory provider is chosen by `memory.provider` (one at
a time).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import UsageError
from ..paths import Location
from . import yaml_edit as Y
from .plugin_files import PLUGIN_NAME


def config_path(loc: Location) -> Path:
    return loc.profile_home / "config.yaml"


def read_config(path: Path) -> tuple[str, dict]:
    if not path.is_file():
        return "", {}
    try:
        text = path.read_text(encoding="utf-8")  # universal newlines: the editor sees "\n" (change_config keeps CRLF)
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not valid UTF-8; save it as UTF-8, then run the command again") from None
    from ..config import YamlRefused, load_yaml

    try:
        data = load_yaml(text) if text.strip() else {}
    except YamlRefused as exc:
        raise UsageError(f"{path}: {exc}; fix it, then run the command again") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: invalid YAML; fix it, then run the command again") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping at the top level")
    return text, data


def backup(path: Path, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    dest = path.with_name(f"{path.name}.automem-{stamp}.bak")
    n = 1
    while dest.exists():
        n += 1
        dest = path.with_name(f"{path.name}.automem-{stamp}-{n}.bak")
    shutil.copy2(path, dest)
    return dest


@dataclass
class ConfigChange:
    path: str
    changed: bool
    backup: str | None = None
    comments_kept: bool = True


def change_config(path: Path, ops: list[Y.Op]) -> ConfigChange:
    """Apply `ops` to the file (backup first, only when something changes)."""
    text, data = read_config(path)
    try:
        new_text, kept = Y.edit_config(text, ops)
    except Y.ShapeError as exc:
        raise UsageError(f"{path}: {exc}; fix that key by hand, then run the command again") from None
    if new_text == text or (yaml.safe_load(new_text) or {}) == data:
        return ConfigChange(str(path), False)  # nothing to do: no backup, no rewrite
    saved = str(backup(path)) if path.exists() else None
    # A symlinked config.yaml (dotfiles) is written through: the link stays, its target changes.
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    newline = "\r\n" if target.exists() and b"\r\n" in target.read_bytes() else "\n"  # keep the file's line endings
    tmp = target.with_name(f".{target.name}.automem.tmp")
    with open(tmp, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(new_text)
    if target.exists():
        shutil.copymode(target, tmp)
    os.replace(tmp, target)
    return ConfigChange(str(path), True, saved, kept)


def provider_of(data: dict) -> str:
    value = Y.get_path(data, "memory", "provider", default="")
    return str(value or "").strip()


def install_ops(data: dict, keep_provider: bool) -> list[Y.Op]:
    ops = [Y.add_item("plugins", "enabled", value=PLUGIN_NAME)]
    disabled = Y.get_path(data, "plugins", "disabled", default=[])
    if isinstance(disabled, list) and PLUGIN_NAME in disabled:
        ops.append(Y.remove_item("plugins", "disabled", value=PLUGIN_NAME))
    if not keep_provider:
        ops.append(Y.set_value("memory", "provider", value=PLUGIN_NAME))
    return ops


def uninstall_ops(data: dict) -> list[Y.Op]:
    ops = [Y.remove_item("plugins", "enabled", value=PLUGIN_NAME)]
    if provider_of(data) == PLUGIN_NAME:
        ops.append(Y.delete_key("memory", "provider"))
    return ops


def fragment_ops(fragment: dict, prefix: tuple[str, ...] = ()) -> list[Y.Op]:
    """A packaged profile's config fragment as edits: mappings merge, lists gain their items, scalars are set."""
    ops: list[Y.Op] = []
    for key, value in fragment.items():
        path = prefix + (str(key),)
        if isinstance(value, dict):
            ops += fragment_ops(value, path)
        elif isinstance(value, list):
            ops += [Y.add_item(*path, value=v) for v in value]
        else:
            ops.append(Y.set_value(*path, value=value))
    return ops
