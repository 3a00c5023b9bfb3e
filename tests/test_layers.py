"""The package's layers, checked: every import inside `automem/` points down.

    cli / dashboard  ->  api  ->  hermes / ops  ->  extract  ->  core  ->  config / log  ->  text / paths / errors

A module may import its own layer's package (core modules import each other) or any layer below it; never a layer
above, and never a sibling at the same height (hermes and ops do not import each other). Imports inside functions
count too: a lazy import is still a dependency.

And no import cycles between any two of the package's modules, inside a layer too (core.recall -> core.resident
-> core.recall was one): the graph of every import statement, module-level or inside a function, the package's
`__init__` facade included, has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "automem"

# group -> height. A group is a sub-package (core, extract, ...) or a top-level module (cli, config, ...).
HEIGHT = {
    "text": 0, "paths": 0, "errors": 0, "version": 0,
    "config": 1, "log": 1,
    "core": 2,
    "extract": 3,
    "hermes": 4, "ops": 4,
    "api": 5,  # automem.Memories, the public Python API: what the CLI and the dashboard call
    "cli": 6, "dashboard": 6,  # the dashboard's Memory tab: beside the CLI, over the same functions
}
FACADE = {"__init__", "__main__"}  # `import automem` (lazy re-exports) and `python -m automem`


def group_of(module: str) -> str | None:
    """`automem.core.store` -> core; `automem.config` -> config; the package itself -> None."""
    parts = module.split(".")
    if parts[0] != "automem" or len(parts) == 1:
        return None
    return parts[1]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = PACKAGE, names: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) for every import statement in the file, relative ones resolved. With `names`, each
    name of a `from X import a, b` comes as X.a, X.b (it may be a module: `from ..core import store`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if names or node.module is None or target == "automem":  # `from . import x`: each name may be a module
                found.extend((node.lineno, f"{target}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, target))
    return [(line, mod) for line, mod in found if mod == "automem" or mod.startswith("automem.")]


def upward_imports(package: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        if path.parent == package and path.stem in FACADE:
            continue
        source = module_name(path, package)
        src_group = group_of(source)
        if src_group not in HEIGHT:
            problems.append(f"{path}: module group {src_group!r} has no layer (add it to HEIGHT in this test)")
            continue
        for line, target in imports_of(path, package):
            tgt_group = group_of(target)
            if tgt_group in (None, "__version__", src_group):
                continue  # the package facade, its version, or the module's own layer
            if tgt_group not in HEIGHT:
                problems.append(f"{path}:{line}: imports {target}, which belongs to no layer")
            elif HEIGHT[tgt_group] >= HEIGHT[src_group]:
                problems.append(f"{path.relative_to(package.parent)}:{line}: {source} ({src_group}, height "
                                f"{HEIGHT[src_group]}) imports {target} ({tgt_group}, height {HEIGHT[tgt_group]})")
    return problems


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {module it imports: first line}, for every module of the package (a `from X import name` of a
    name that is no module counts as importing X)."""
    paths = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for source, path in paths.items():
        edges = graph.setdefault(source, {})
        for line, target in imports_of(path, package, names=True):
            while target not in paths and "." in target:
                target = target.rpartition(".")[0]
            if target in paths and target != source:
                edges.setdefault(target, line)
    return graph


def import_cycles(package: Path = PACKAGE) -> list[str]:
    """Each group of modules that import each other (directly or around a loop), with the imports that close it:
    "automem.core.a -> automem.core.b (automem/core/a.py:3); automem.core.b -> automem.core.a (...)"."""
    graph = import_graph(package)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    problems = []
    for group in sorted(groups):
        edges = [f"{a} -> {b} (line {line})" for a in group for b, line in sorted(graph[a].items()) if b in group]
        problems.append("; ".join(edges))
    return problems


def test_every_import_points_down():
    assert upward_imports() == []


def test_every_group_has_a_layer():
    groups = {p.stem for p in PACKAGE.glob("*.py") if p.stem not in FACADE}
    groups |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert groups - set(HEIGHT) == set()


def test_the_check_catches_an_upward_import(tmp_path):
    """The checker itself: a core module that imports the extraction layer is reported."""
    fake = tmp_path / "automem"
    (fake / "core").mkdir(parents=True)
    (fake / "extract").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "core" / "__init__.py").write_text("")
    (fake / "extract" / "__init__.py").write_text("")
    (fake / "extract" / "spool.py").write_text("from ..core import store\n")  # down: fine
    (fake / "core" / "store.py").write_text("def f():\n    from ..extract.spool import x\n")  # up: reported
    problems = upward_imports(fake)
    assert len(problems) == 1 and "automem.core.store (core" in problems[0] and "automem.extract.spool" in problems[0]


def test_no_import_cycles():
    assert import_cycles() == []


def test_the_check_catches_an_import_cycle(tmp_path):
    """The checker itself: two core modules that import each other, one of them only inside a function, and a loop
    through a third, are reported; a module imported by both (no way back) is not part of either."""
    fake = tmp_path / "automem"
    (fake / "core").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "core" / "__init__.py").write_text("")
    (fake / "core" / "memory.py").write_text("X = 1\n")
    (fake / "core" / "recall.py").write_text("from .memory import X\n\n\ndef f():\n    from . import resident\n")
    (fake / "core" / "resident.py").write_text("from .memory import X\nfrom .recall import f\n")
    (fake / "core" / "a.py").write_text("import automem.core.b\n")
    (fake / "core" / "b.py").write_text("from ..core import c\n")
    (fake / "core" / "c.py").write_text("from .a import anything\n")
    loop = ("automem.core.a -> automem.core.b (line 1); automem.core.b -> automem.core.c (line 1); "
            "automem.core.c -> automem.core.a (line 1)")
    assert import_cycles(fake) == [loop, "automem.core.recall -> automem.core.resident (line 5); "
                                         "automem.core.resident -> automem.core.recall (line 2)"]
    (fake / "core" / "recall.py").write_text("from .memory import X\n")  # the lazy import gone: one cycle left
    assert import_cycles(fake) == [loop]
    (fake / "core" / "c.py").write_text("from .memory import X\n")  # and the loop broken: none
    assert import_cycles(fake) == []


@pytest.mark.parametrize("layer", ["core", "extract", "hermes", "ops", "dashboard"])
def test_each_layer_says_what_it_may_import(layer):
    doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text(encoding="utf-8")))
    assert doc and "May import" in doc
