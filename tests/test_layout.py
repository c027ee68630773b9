"""The package layout: imports flow one way, from the front doors down to the base, with no cycle.

Every `import` in `harness/` is read with `ast` (those inside functions too, and those only for
type checking), so a new module that reaches "up" a stage, or closes a circle, fails here with
the offending line named. docs/layout.md draws the same map.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"

#: Rank of each stage: a module may import only modules of its own rank or a higher one. The
#: front doors (rank 0) and the base (rank 9) are flat groups; every folder has a rank of its own.
STAGES = {
    "harness": 0,  # the package root re-exports; the front doors below share its rank
    "harness.__main__": 0,
    "harness.cli": 0,
    "harness.plugin": 0,
    "harness.adapter": 0,
    "harness.fuzz": 1,
    "harness.pipeline": 2,
    "harness.reports": 3,
    "harness.check": 4,
    "harness.capture": 5,
    "harness.suite": 6,
    "harness.worker": 7,
    "harness.drive": 8,
    "harness.errors": 9,
    "harness.seconds": 9,
    "harness.files": 9,
    "harness.safetext": 9,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def stage(module: str) -> str:
    """The stage a module belongs to: the longest key of STAGES it starts with."""
    best = ""
    for key in STAGES:
        if (module == key or module.startswith(key + ".")) and len(key) > len(best):
            best = key
    if not best:
        raise AssertionError(f"{module} is in no stage: add it to STAGES and docs/layout.md")
    return best


def imports(path: Path, known: set[str]) -> list[tuple[str, int]]:
    """The harness modules that `path` imports, with the line of each import."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from harness.suite import golden` imports the module harness.suite.golden.
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                for a in node.names
            ]
        else:
            continue
        found += [(name, node.lineno) for name in names if name.split(".")[0] == "harness"]
    return found


def graph() -> dict[str, list[tuple[str, int]]]:
    found = modules()
    return {name: imports(path, set(found)) for name, path in found.items()}


def test_every_module_belongs_to_a_stage() -> None:
    for name in modules():
        assert stage(name)


def test_no_module_imports_a_stage_above_its_own() -> None:
    upward = []
    for name, edges in graph().items():
        own = stage(name)
        for target, line in edges:
            theirs = stage(target)
            if STAGES[theirs] < STAGES[own]:
                upward.append(f"{modules()[name].relative_to(ROOT)}:{line}: {name} -> {target}")
    assert upward == []


def test_there_is_no_import_cycle() -> None:
    edges = {name: {t for t, _ in targets if t != name} for name, targets in graph().items()}
    # Tarjan would name every cycle; a depth-first search that reports the first is enough here.
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_the_reference_never_imports_the_harness() -> None:
    for path in sorted((ROOT / "reference").rglob("*.py")):
        assert imports(path, set()) == [], path


def test_the_checker_itself_sees_an_upward_import(tmp_path: Path) -> None:
    # The walk must be able to fail: an import placed inside a function is still found.
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from harness.reports import text\n")
    assert imports(source, {"harness.reports.text"}) == [("harness.reports.text", 2)]
