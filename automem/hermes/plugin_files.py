"""The files automem puts into a Hermes profile (the plugin, the skill, the packaged profiles): where they come
from and how a copy is made.

Plugins load from `<profile home>/plugins/` only (Hermes 0.19): a plugin in the root is invisible to other profiles,
and `hermes profile create --clone` copies the config but not `plugins/`. So every profile gets its own copy,
replaced whole and only when it differs (`copy_tree`, `tree_digest`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..paths import PACKAGE_PARENT, Location
from ..version import __version__

PLUGIN_NAME = "automem"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".DS_Store")


# -- where the files to install come from -------------------------------------------------------------------------
@dataclass(frozen=True)
class Sources:
    """Where the files to install lie: the plugin directory, the skill, the packaged profiles."""

    project: Path

    @property
    def plugin(self) -> Path:
        return self.project / "hooks" / PLUGIN_NAME

    @property
    def skill(self) -> Path:
        return self.project / "skills" / PLUGIN_NAME

    @property
    def profiles(self) -> Path:
        return self.project / "profiles"

    def packaged_profile(self, name: str) -> Path | None:
        path = self.profiles / name
        return path if (path / "SOUL.md").is_file() else None


# Inside a wheel or sdist install the plugin, the skill and the profiles are package data (setup.py copies them
# there); in a checkout or an editable install they are the repository's top-level folders.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
BUNDLED = PACKAGE_DIR / "_bundled"


def _complete(src: Sources) -> bool:
    return (src.plugin / "__init__.py").is_file() and (src.plugin / "plugin.yaml").is_file() \
        and (src.skill / "SKILL.md").is_file()


def find_sources(project: str | os.PathLike | None = None) -> Sources:
    """The files to install: the package's own copy (wheel, sdist), else the checkout next to the package."""
    candidates = [Path(project)] if project else [BUNDLED, PACKAGE_PARENT]
    for candidate in candidates:
        if _complete(Sources(candidate)):
            return Sources(candidate)
    raise UsageError(f"automem's plugin files (hooks/{PLUGIN_NAME}/, skills/{PLUGIN_NAME}/) are neither in "
                     f"{BUNDLED} nor in {PACKAGE_PARENT}; reinstall automem "
                     f"(`pip install --force-reinstall automem=={__version__}`)")


# -- copying the plugin and the skill ----------------------------------------------------------------------------
def tree_digest(path: Path) -> str | None:
    """A digest of every file under `path` (names and bytes), None when it does not exist."""
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and not p.name.endswith((".pyc", ".pyo"))):
        h.update(str(file.relative_to(path)).encode())
        h.update(b"\0")
        h.update(file.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def copy_tree(src: Path, dest: Path) -> bool:
    """Replace `dest` with a copy of `src` (via a temporary sibling). False when it was already identical."""
    if tree_digest(src) == tree_digest(dest):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        shutil.copytree(src, tmp / dest.name, ignore=IGNORED)
        old = None
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
        os.replace(tmp / dest.name, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


# -- where they are installed ----------------------------------------------------------------------------------------
def list_profiles(root: Path) -> list[str]:
    """`default` plus every profile folder under `<root>/profiles/`."""
    names = ["default"]
    pdir = root / "profiles"
    if pdir.is_dir():
        names += sorted(p.name for p in pdir.iterdir() if p.is_dir() and not p.name.startswith("."))
    return names


def installed_profiles(root: Path) -> list[str]:
    """The profiles of `root` whose home holds automem's plugin."""
    return [p for p in list_profiles(root)
            if (Location(root, p).profile_home / "plugins" / PLUGIN_NAME / "__init__.py").is_file()]


def tab_dir(root: Path) -> Path:
    """Where `hermes dashboard` finds the Memory tab: the root's plugins only (automem.hermes.tab keeps it)."""
    return root / "plugins" / PLUGIN_NAME / "dashboard"
