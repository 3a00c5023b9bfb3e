"""automem.log: no memory words, no secrets, rotation, and the purge that forget uses."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import automem.log as log
from automem.log import hashed, log_event, log_files, purge_lines, read_events

REPO = Path(__file__).resolve().parent.parent


def test_text_fields_are_hashed_and_every_other_string_is_redacted(location):
    log_event(location, "write", decisions=[{"decision": "rejected", "text": "用户住在上海", "reason": "r"}],
              candidates=[{"category": "persona", "text": "I use vim"}], answer_preview="当然！", content="x y z",
              kept_text="a memory", error="HTTP 500: echo of password=hunter22x and sk-abcdefghijklmnopqrstuv")
    raw = location.log_file.read_text(encoding="utf-8")
    assert "上海" not in raw and "I use vim" not in raw and "当然" not in raw and "a memory" not in raw
    assert "hunter22x" not in raw and "sk-abcdefghij" not in raw and "[REDACTED" in raw
    [ev] = read_events(location, "write")
    assert ev["decisions"][0]["text"] == hashed("用户住在上海") and ev["decisions"][0]["reason"] == "r"
    assert ev["candidates"][0] == {"category": "persona", "text": hashed("I use vim")}
    assert stat.S_IMODE(location.log_file.stat().st_mode) == 0o600


def test_the_log_rotates_and_keeps_its_backups(location, monkeypatch):
    monkeypatch.setattr(log, "LOG_MAX_BYTES", 2000)
    for n in range(200):
        log_event(location, "tick", n=n)
    files = [p for p in log_files(location) if p.exists()]
    assert [p.name for p in files] == ["automem.log.3", "automem.log.2", "automem.log.1", "automem.log"]
    assert all(p.stat().st_size < 2000 + 200 for p in files)
    ticks = [e["n"] for e in read_events(location, "tick")]
    assert ticks == sorted(ticks) and ticks[-1] == 199 and len(ticks) < 200  # the oldest rotated away, in order
    assert not (location.logs_dir / "automem.log.4").exists()


def test_rotation_by_several_processes_at_once_loses_no_line_of_the_kept_files(location, monkeypatch):
    """Four writers append while the file rotates under them: every line in the kept files is whole, the files
    stay bounded, and the newest lines are there."""
    child = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        import automem.log as log
        from automem.paths import Location
        from pathlib import Path
        log.LOG_MAX_BYTES = 20000
        loc = Location(Path({str(location.root)!r}), "default")
        while not os.path.exists({str(location.root / "go")!r}):  # all four start together
            time.sleep(0.005)
        for n in range(400):
            log.log_event(loc, "w", writer=int(sys.argv[1]), n=n)
    """)
    location.root.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, "-c", child, str(w)]) for w in range(4)]
    time.sleep(1.5)
    (location.root / "go").write_text("")
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    lines = [line for p in log_files(location) if p.exists() for line in p.read_text(encoding="utf-8").splitlines()]
    assert all(json.loads(line)["event"] == "w" for line in lines)  # no torn line
    assert max(e["n"] for e in read_events(location, "w")) == 399
    kept = [p for p in location.logs_dir.iterdir() if p.name.startswith("automem.log")]
    # bounded: a file outgrows the limit only by what the others append while one process renames it
    assert len(kept) == 4 and all(p.stat().st_size < 3 * 20000 for p in kept)


def test_purge_takes_every_line_holding_the_words_out_of_every_log_file(location, monkeypatch):
    monkeypatch.setattr(log, "LOG_MAX_BYTES", 600)
    for n in range(30):
        log_event(location, "note", n=n, note=f"line {n}")
    # lines an older automem wrote with the words in them, in the rotated file and in the drainer's stderr
    old = location.logs_dir / "automem.log.1"
    with open(old, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "write", "decisions": [{"text": "用户住在上海,靠近地铁"}]},
                            ensure_ascii=False) + "\n")
        fh.write(json.dumps({"event": "write", "decisions": [{"text": "用户住在上海,靠近地铁"}]}) + "\n")
    (location.logs_dir / "drainer.stderr").write_text("Traceback ...\nValueError: 用户住在上海，靠近地铁\n",
                                                      encoding="utf-8")
    before = len(read_events(location))
    assert purge_lines(location, ["用户住在上海,靠近地铁"]) == 3  # as stored (normalised); the stderr line is raw
    everything = b"".join(p.read_bytes() for p in location.logs_dir.iterdir() if p.is_file())
    assert "上海".encode() not in everything and b"\\u4e0a\\u6d77" not in everything
    assert len(read_events(location)) == before - 2
    assert "Traceback" in (location.logs_dir / "drainer.stderr").read_text()
