"""Control characters in memory text (issue 27): never stored raw, never printed raw.

Terminal escape sequences ("\\x1b[2J", "\\x1b]0;title\\x07"), other C0 / C1 controls and bidi overrides are
removed by `normalise` (so by the write path); whitespace controls stay whitespace. A record an older automem
stored with them is still shown safely: `list`, `search` and `search --file` print no raw control character, and
their JSON still decodes to the stored text exactly.
"""

from __future__ import annotations

import json
import re

import pytest

from automem.cli import main
from automem.config import Config
from automem.core.memory import Memory
from automem.core.recall import line_of
from automem.core.store import Store
from automem.paths import Location
from automem.text import neutralise_fences, normalise, printable, validate

# What a terminal or a bidi-aware viewer would act on: C0 but tab/newline, DEL, C1, bidi embeddings and isolates.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")

HOSTILE = [
    ("\x1b[31mred\x1b[0m alert on the build box", "red alert on the build box"),
    ("title \x1b]0;pwned\x07set by an OSC sequence", "title set by an OSC sequence"),
    ("clear \x1b[2J\x1b[Hthe screen then print", "clear the screen then print"),
    ("ring\x07 the bell and back\x08space twice", "ring the bell and backspace twice"),
    ("C1 \x9b31mcontrol sequence introducer", "C1 control sequence introducer"),
    ("a file named \u202egnp.exe is a trap", "a file named gnp.exe is a trap"),
    ("isolate \u2066inner\u2069 text stays readable", "isolate inner text stays readable"),
    ("nul\x00 and del\x7f are gone", "nul and del are gone"),
    ("tabs\tand\nnewlines\r\nstay spaces", "tabs and newlines stay spaces"),
    ("我喜欢\x1b[1m粗体\x1b[0m的标题", "我喜欢粗体的标题"),
]


@pytest.mark.parametrize("raw, clean", HOSTILE, ids=[str(n) for n in range(len(HOSTILE))])
def test_normalise_and_validate_remove_control_characters(raw, clean):
    assert normalise(raw) == clean
    assert validate(raw) == (clean, None)


def test_meaningful_text_is_unchanged():
    for text in ("emoji 👍🏽 and 👨‍👩‍👧 families", "עברית and العربية side by side", "tab-free plain text",
                 "ZWNJ in Persian می‌خواهم stays"):
        assert normalise(text) == text


def test_printable_shows_what_was_there_without_acting_on_it():
    shown = printable("x\x1b[2Jy\u202ez\x9bw\tq\nr")
    assert not RAW_CONTROL.search(shown)
    assert shown == "x\\x1b[2Jy\\u202ez\\x9bw q r"
    assert printable("plain 中文 text") == "plain 中文 text"


def test_recall_lines_carry_no_control_characters():
    assert neutralise_fences("a\x1b[31mb\u202ec") == "abc"


@pytest.fixture
def legacy_root(root):
    """A store holding memories an older automem wrote past today's normalise (escapes and bidi kept raw)."""
    store = Store(Location(root, "default"), Config())
    legacy = [Memory(id=f"m_{n:024x}", text=raw, wing="user", profile="default", created_at=1, updated_at=1)
              for n, (raw, _) in enumerate(HOSTILE[:8])]
    store.write_records(legacy, store.embed([m.text for m in legacy]))
    store.close()
    return root


def _check_output(out: str) -> None:
    assert out.strip()
    assert not RAW_CONTROL.search(out), repr(out[:300])


def test_list_and_search_never_print_raw_control_characters(legacy_root, tmp_path, capsys):
    home = ["--hermes-home", str(legacy_root)]
    assert main(["list", *home]) == 0
    out = capsys.readouterr().out
    _check_output(out)
    assert "\\x1b[31mred" in out  # shown, escaped: the owner sees what is there

    assert main(["list", "--json", *home]) == 0
    out = capsys.readouterr().out
    _check_output(out)
    stored = sorted(json.loads(line)["text"] for line in out.splitlines())
    assert stored == sorted(raw for raw, _ in HOSTILE[:8])  # JSON keeps the exact text, escaped

    assert main(["search", "red alert build box", *home]) == 0
    _check_output(capsys.readouterr().out)
    assert main(["search", "red alert build box", "--json", *home]) == 0
    out = capsys.readouterr().out
    _check_output(out)
    assert any(json.loads(line)["text"] == HOSTILE[0][0] for line in out.splitlines())

    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "C1 control sequence"}) + "\n", encoding="utf-8")
    assert main(["search", "--file", str(queries), *home]) == 0
    _check_output(capsys.readouterr().out)


def test_recall_block_of_a_legacy_record_has_no_control_characters(legacy_root):
    from automem.core.recall import load_items

    items = load_items(Location(legacy_root, "default"), Config())
    assert items
    for item in items:
        assert not RAW_CONTROL.search(line_of(item, "default"))


def test_add_stores_the_clean_text_and_list_shows_it(root, capsys):
    home = ["--hermes-home", str(root)]
    assert main(["add", "\x1b[31mI prefer\x1b[0m green tea \u202eover coffee", "--no-judge", *home]) == 0
    capsys.readouterr()
    assert main(["list", "--json", *home]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["text"] == "I prefer green tea over coffee"
