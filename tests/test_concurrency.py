"""Many writers at once, and a writer killed mid-write: nothing reported stored is lost (embedded store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_eight_writers_and_a_sigkilled_one_lose_nothing(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "stress_store.py"), "--procs", "8",
                          "--per-proc", "100", "--kill-rounds", "3", "--root", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=1200)
    assert out.stdout.strip(), out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    conc, killed, check = result["concurrent"], result["killed"], result["check"]
    assert conc["errors"] == []
    assert conc["reported_stored"] == 800
    assert all(k["returncode"] == -9 for k in killed["kills"])  # really killed, not finished
    assert killed["reported_stored"] >= 5
    assert check["missing"] == []
    assert check["stored_total"] >= 800 + killed["reported_stored"]
    assert check["reopen_query_ok"]
    assert result["ok"], out.stdout
