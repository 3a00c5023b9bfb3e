"""Read-only SQLite opens of Hermes' files (state.db, a kanban board) from paths with `#` and `?` in them.

A raw `file:{path}?mode=ro` URI ends the path at `#` or `?`: sqlite would open (and create, read-write) another
file. The URIs are built from the percent-quoted path (`automem.paths.sqlite_ro_uri`)."""

from __future__ import annotations

import sqlite3

import pytest

from automem.hermes.kanban_board import open_board
from automem.hermes.session import read_state_transcript
from automem.paths import sqlite_ro_uri

ODD_NAMES = ["a#b", "a?b", "we?ird#name", "100% sure", "space and ünïcode"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_state_db_in_a_folder_with_uri_characters_is_read_and_nothing_else_is_opened(tmp_path, name):
    home = tmp_path / name
    home.mkdir()
    db = home / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT)")
    conn.executemany("INSERT INTO messages (session_id, role, content) VALUES (?, ?, ?)",
                     [("s1", "user", "我习惯用vim"), ("s1", "assistant", "好的"), ("s2", "user", "other")])
    conn.commit()
    conn.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert read_state_transcript(home, "s1") == [{"role": "user", "content": "我习惯用vim"},
                                                 {"role": "assistant", "content": "好的"}]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no stray file where the raw URI would point
    assert sorted(p.name for p in home.iterdir()) == ["state.db"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_board_is_opened_read_only_at_its_own_path(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    db = folder / "kanban.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE task_runs (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    board = open_board(db)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            board.execute("INSERT INTO task_runs DEFAULT VALUES")
    finally:
        board.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_uri_quotes_what_sqlite_would_read_as_query_or_fragment():
    uri = sqlite_ro_uri("/tmp/x#y?z/state.db")
    assert uri == "file:/tmp/x%23y%3Fz/state.db?mode=ro"
    assert uri.count("?") == 1 and "#" not in uri
