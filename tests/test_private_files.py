"""Owner-only files: after a full session, nothing under `<root>/automem` is readable by group or others, whatever
the umask (the test sets a permissive 0o022), on the embedded store and beside a Chroma server alike."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from automem.cli import main
from automem.extract.pipeline import stop_background_drainers
from automem.extract.spool import Job, job_path, move_to_dead
from automem.hermes.session import HermesSession
from automem.log import log_event
from automem.paths import Location
from tests.support.seed import SEED_CHAT


@pytest.fixture
def permissive_umask():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def readable_by_others(top: Path) -> list[str]:
    bad = []
    for path in [top, *top.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if not path.is_symlink() and mode & 0o077:
            bad.append(f"{path.relative_to(top.parent)} {oct(mode)}")
    return bad


def test_nothing_under_the_automem_folder_is_readable_by_others_after_a_full_session(permissive_umask, root, config,
                                                                                     tmp_path, capsys):
    loc = Location(root, "default")
    # a gateway-style session (its drainer is a thread), the rules extractor, every kind of write
    sess = HermesSession(loc, config, session_id="s1", platform="telegram")
    sess.system_prompt_block()
    sess.prefetch("which editor do I use?")
    assert '"new"' in sess.handle_tool("automem_remember",
                                       {"text": "用户最喜欢的数据库是SQLite", "category": "persona"})
    sess.handle_tool("automem_search", {"query": "数据库"})
    sess.on_memory_write("add", "user", "User prefers dark mode in every editor")
    sess.on_session_end(SEED_CHAT)
    try:
        deadline = 120
        start = time.monotonic()
        while not any((loc.spool_dir / ".done").glob("j_*")) and time.monotonic() - start < deadline:
            time.sleep(0.2)
        assert any((loc.spool_dir / ".done").glob("j_*")), "the session's job was not drained"
    finally:
        stop_background_drainers()
    sess.system_prompt_block()
    sess.shutdown()
    # the command line on the same root: forget, export (to a folder outside), a dead job, a rotated log
    code = main(["add", "Always write dates as RFC3339", "--wing", "instruction", "--hermes-home", str(root)])
    assert code == 0
    move_to_dead(loc, Job(id="j_dead", profile="default", transcript=[["user", "hi"], ["assistant", "ok"]]), "gave up")
    assert job_path(loc, "j_dead", dead=True).is_file()
    assert main(["export", str(tmp_path / "out.jsonl"), "--hermes-home", str(root)]) == 0
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600
    import automem.log as log_module

    log_module.LOG_MAX_BYTES, saved = 1, log_module.LOG_MAX_BYTES
    try:
        log_event(loc, "probe")  # rotates
    finally:
        log_module.LOG_MAX_BYTES = saved
    capsys.readouterr()

    automem = root / "automem"
    names = {p.name for p in automem.rglob("*")}
    assert {"logs", "spool", "index", "automem.log.1", "recall.sqlite3", "write.lock"} <= names
    if config.chroma_url == "":
        assert {"chroma.sqlite3", "data_level0.bin", "generation"} <= names
    assert readable_by_others(automem) == []
