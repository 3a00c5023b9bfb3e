"""The code a benchmark or evaluation script ran on, for its printed header."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def commit() -> str:
    """HEAD (short, "+dirty(automem/)" when automem/ has uncommitted changes), or $AUTOMEM_COMMIT for a copy
    outside git (e.g. a `git archive` export)."""
    if os.environ.get("AUTOMEM_COMMIT"):
        return os.environ["AUTOMEM_COMMIT"]
    try:
        sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "automem"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty(automem/)" if dirty else "") if sha else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
