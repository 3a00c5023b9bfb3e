"""Where things live: the Hermes root, the profile, and automem's folders under the root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DIR_MODE = 0o700
# The folder that holds the `automem` package: a checkout (or site-packages). Child processes put it on
# PYTHONPATH so they import this very automem.
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def _user_hermes() -> Path:
    return Path(os.path.expanduser("~")) / ".hermes"


def resolve_root_and_profile(hermes_home: str | os.PathLike | None = None) -> tuple[Path, str]:
    """(root, profile) for a HERMES_HOME value, as Hermes resolves it.

    unset -> ~/.hermes, profile "default"; `<x>/profiles/<name>` -> root `<x>`, profile `<name>`;
    anything else -> that folder is the root, profile "default".
    """
    home = hermes_home if hermes_home not in (None, "") else os.environ.get("HERMES_HOME") or None
    if home is None:
        return _user_hermes(), "default"
    path = Path(os.path.expanduser(str(home))).absolute()
    if path.parent.name == "profiles" and path.name:
        return path.parent.parent, path.name
    return path, "default"


@dataclass(frozen=True)
class Location:
    """A resolved root + profile. Everything automem writes lives under `automem_dir`."""

    root: Path
    profile: str

    @classmethod
    def resolve(cls, hermes_home: str | os.PathLike | None = None, profile: str | None = None) -> "Location":
        root, home_profile = resolve_root_and_profile(hermes_home)
        return cls(root=root, profile=profile or home_profile)

    # -- Hermes folders (read only) -------------------------------------------------
    @property
    def profile_home(self) -> Path:
        """The HERMES_HOME of this profile: the root for `default`, else `<root>/profiles/<name>`."""
        return self.root if self.profile == "default" else self.root / "profiles" / self.profile

    # -- automem folders ------------------------------------------------------------
    @property
    def automem_dir(self) -> Path:
        return self.root / "automem"

    @property
    def chroma_dir(self) -> Path:
        return self.automem_dir / "chroma"

    @property
    def spool_dir(self) -> Path:
        return self.automem_dir / "spool"

    @property
    def dead_dir(self) -> Path:
        return self.automem_dir / "dead"

    @property
    def logs_dir(self) -> Path:
        return self.automem_dir / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs_dir / "automem.log"

    @property
    def write_lock(self) -> Path:
        return self.automem_dir / "write.lock"

    @property
    def cache_dir(self) -> Path:
        return self.automem_dir / "cache"

    def ensure_dirs(self) -> None:
        """Create automem's folders with mode 0700 (memories are personal)."""
        for d in (self.automem_dir, self.chroma_dir, self.spool_dir, self.dead_dir, self.logs_dir, self.cache_dir):
            ensure_private_dir(d)


def ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    try:
        os.chmod(path, DIR_MODE)
    except OSError:
        pass
