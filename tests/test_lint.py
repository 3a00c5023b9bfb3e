"""`ruff check .` is clean on the whole tree (the rules are pyproject.toml's [tool.ruff]), so CI checks the lint;
and no line of Python is over 120 characters, also where ruff's width rule is off (CJK pattern tables)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MISSING = "ruff is not installed: scripts/bootstrap.sh --test (or pip install -e '.[test]')"
MAX_CHARS = 120


def test_ruff_check_is_clean():
    # ruff is in the test extras; a missing ruff is a broken set-up, not a reason to skip the check.
    beside = Path(sys.executable).with_name("ruff")
    ruff = str(beside) if beside.exists() else shutil.which("ruff")
    assert ruff, MISSING
    res = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"ruff check . found problems (see docs/testing.md):\n{res.stdout}{res.stderr}"


def test_no_python_line_is_over_120_characters():
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=REPO,
                           capture_output=True, text=True, timeout=60).stdout.split()
    if not files:  # not a git checkout (an unpacked sdist): every .py file under the repository
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts]
    long = [f"{name}:{n}: {len(line)} characters" for name in files if (REPO / name).is_file()
            for n, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > MAX_CHARS]
    assert long == [], "\n".join(long)
