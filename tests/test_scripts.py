"""scripts/ is a package run as `python -m scripts.<name>`: no script edits sys.path (its own or a child probe's),
every script measures through scripts/harness.py, and no test imports a script (what a test needs lives in
tests/support/ or in the package). Read from the source (ast), nothing is run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((REPO / "scripts").glob("*.py"))
TESTS = sorted(p for p in (REPO / "tests").rglob("*.py") if "data" not in p.relative_to(REPO / "tests").parts)
MUTATORS = {"insert", "append", "extend", "remove", "pop", "clear", "sort", "reverse", "__setitem__", "__iadd__"}
LOADERS = {"spec_from_file_location", "run_path", "run_module", "import_module", "__import__", "SourceFileLoader",
           "load_source"}
# a child probe's source in a string: `sys.path.insert(...)`, `sys.path[0:0] = ...`, `sys.path += ...`
PATH_EDIT_IN_TEXT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\b|\[[^\]]*\]\s*=|\+?=)")


def _is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def sys_path_edits(source: str) -> list[int]:
    """Lines of `source` that change sys.path, in its code or in the code of a child it runs (a string)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_sys_path(node.func.value) \
                and node.func.attr in MUTATORS:
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(_is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value)) for t in targets):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "addsitedir":
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH_EDIT_IN_TEXT.search(node.value):
            lines.append(node.lineno)
    return sorted(set(lines))


SCRIPT_FILES = {p.name for p in SCRIPTS if p.name != "__init__.py"}


def _names_scripts(value: object) -> bool:
    """A module or file name of scripts/: `scripts`, `scripts.x`, `scripts/x.py`, `.../scripts/...`, `x.py`."""
    return isinstance(value, str) and (value == "scripts" or value.startswith(("scripts.", "scripts/"))
                                       or "/scripts/" in value or value in SCRIPT_FILES)


def script_imports(source: str) -> list[int]:
    """Lines of `source` that import something from scripts/ (an import statement, or a loader pointed at it)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(_names_scripts(a.name) for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _names_scripts(node.module or ""):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in LOADERS and any(_names_scripts(c.value) for arg in [*node.args, *node.keywords]
                                       for c in ast.walk(arg) if isinstance(c, ast.Constant)):
                lines.append(node.lineno)
    return sorted(set(lines))


def uses_harness(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module == "scripts.harness" or (node.module == "scripts"
                                                     and any(a.name == "harness" for a in node.names))):
            return True
        if isinstance(node, ast.Import) and any(a.name == "scripts.harness" for a in node.names):
            return True
    return False


def test_the_checks_see_what_they_look_for():
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')\n") == [2]
    assert sys_path_edits("import sys\nx = 1\nsys.path[0:0] = ['x']\n") == [3]
    assert sys_path_edits("import sys\nsys.path += ['x']\n") == [2]
    assert sys_path_edits("CHILD = '''\nimport sys\nsys.path.insert(0, {repo!r})\n'''\n") == [1]
    assert sys_path_edits("import sys\nprint(sys.path[0], len(sys.path))\n") == []
    assert script_imports("from scripts import eval_dedup\n") == [1]
    assert script_imports("import scripts.eval_recall as ev\n") == [1]
    assert script_imports("import importlib.util as u\nu.spec_from_file_location('e', REPO / 'scripts' / 'e.py')\n") \
        == [2]
    assert script_imports("spec = spec_from_file_location('t', folder / 'tune_recall.py')\n") == [1]
    assert script_imports("import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'scripts.stress_store'])\n") \
        == []
    assert uses_harness("from scripts.harness import percentile\n") and uses_harness("from scripts import harness\n")
    assert not uses_harness("import statistics\n")


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_script_edits_sys_path(path):
    assert sys_path_edits(path.read_text(encoding="utf-8")) == [], \
        f"{path.name} edits sys.path: run it as `python -m scripts.{path.stem}` from the repository root instead"


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.stem not in ("__init__", "harness", "probe")],
                         ids=lambda p: p.name)
def test_every_script_measures_through_the_harness(path):
    assert uses_harness(path.read_text(encoding="utf-8")), f"{path.name} does not import scripts.harness"


def test_scripts_is_a_package():
    assert (REPO / "scripts" / "__init__.py").is_file()


@pytest.mark.parametrize("path", TESTS, ids=lambda p: str(p.relative_to(REPO / "tests")))
def test_no_test_imports_a_script(path):
    assert script_imports(path.read_text(encoding="utf-8")) == [], \
        f"{path.relative_to(REPO)} imports from scripts/: move what it needs into tests/support/ or the package"
