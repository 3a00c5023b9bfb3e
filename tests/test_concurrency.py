"""Many writers at once, and a writer killed mid-write: nothing reported stored is lost (embedded store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow  # multi-process stress: eight writers of 100 memories each, then three SIGKILLed ones
@pytest.mark.embedder("hash")  # what is tested is that nothing is lost, not what the texts mean
def test_eight_writers_and_a_sigkilled_one_lose_nothing(tmp_path):
    out = subprocess.run([sys.executable, "-m", "scripts.stress_store", "--procs", "8", "--per-proc", "100",
                          "--kill-rounds", "3", "--root", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=1200, cwd=REPO)
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


OPEN = ("import sys\nfrom automem.config import Config\nfrom automem.core.store import open_store\n"
        "from automem.paths import Location\n"
        "store = open_store(Location.resolve(hermes_home=sys.argv[1]), Config())\nstore.count()\nstore.close()\n")


@pytest.mark.slow  # multi-process stress: eight rounds of four processes racing to set up a new root
def test_processes_opening_a_new_root_at_once_all_open_it(tmp_path):
    """Chroma's first set-up of a new store is not safe across processes (without the lock around it, 2 of 20
    rounds of three processes failed: "table collections already exists"). Kanban workers and drainers do start
    together on a new root. Each round: four processes open one new root at once; every one must open it."""
    env = dict(os.environ, PYTHONPATH=REPO)
    for round_ in range(8):
        root = tmp_path / f"root{round_}"
        root.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", OPEN, str(root)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, [err.strip().splitlines()[-1:] for _, err in outs]
