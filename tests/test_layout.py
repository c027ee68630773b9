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
    "harness.clients": 7,  # the adapter kit: runs in a worker's process, in the target's code
    "harness.drive": 8,
    "harness.errors": 9,
    "harness.seconds": 9,
    "harness.files": 9,
    "harness.temp_files": 9,
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


# --- no private name across modules ------------------------------------------------------------


def private_imports(path: Path, known: set[str]) -> list[str]:
    """Where `path` uses a private name (`_name`, not `__name__`) of another harness module: in
    `from harness.x import _name`, or as `x._name` of a harness module it imported as `x`."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: set[str] = set()  # names bound to harness modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.asname and a.name.startswith("harness.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "harness":
                continue
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    aliases.add(alias.asname or alias.name)
                elif _private(alias.name):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_uses_a_private_name_of_another() -> None:
    # A name shared between modules is public where it lives (or moves to where both need it).
    known = set(modules())
    found = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in modules().values()
        for where in private_imports(path, known)
    ]
    assert found == []


def test_the_private_name_check_can_fail(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from harness.worker.prepare import _x, BUFFER\n"
        "from harness.drive import forked\n"
        "import harness.drive.pipes as pipes\n"
        "forked._SERVERS, pipes._GROUPS, forked.__doc__\n"
    )
    known = {"harness.drive.forked", "harness.drive.pipes"}
    assert sorted(private_imports(source, known)) == [
        "1: from harness.worker.prepare import _x",
        "4: forked._SERVERS",
        "4: pipes._GROUPS",
    ]


# --- nothing happens on import -----------------------------------------------------------------


def module_level_calls(path: Path) -> list[str]:
    """The calls made for their effect when `path` is imported: expression statements at module
    level (in a module-level `if`, `for`, `with` or `try` too), outside `if __name__ ==
    "__main__":`. A module may compute its constants (`X = f()`); it may not *do* something."""
    found = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.If):
                if "__main__" not in ast.unparse(node.test):
                    walk(node.body)
                    walk(node.orelse)
            elif isinstance(node, ast.For | ast.While | ast.With):
                walk(node.body)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
                walk(node.orelse)
                walk(node.finalbody)

    walk(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def test_no_module_does_something_when_imported() -> None:
    # `python -m harness` and `python -m harness.adapter` are programs: running is their point.
    found = [
        f"{path.relative_to(ROOT)}:{where}"
        for name, path in modules().items()
        if path.name != "__main__.py"
        for where in module_level_calls(path)
    ]
    assert found == []


def test_the_import_check_can_fail(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        '"""Doc."""\nimport atexit\nX = len("ab")\natexit.register(print)\n'
        "if X:\n    print(X)\n"
        'if __name__ == "__main__":\n    print("run")\n'
    )
    assert module_level_calls(source) == ["4: atexit.register(print)", "6: print(X)"]


#: Imports every module of the harness with the installed command's command line (the one that
#: used to start a fork server as `harness` was imported), with every way of starting a process
#: or a thread refused, and says what was asked for and which processes and threads exist.
_IMPORT_ALL = """
import importlib, json, os, pkgutil, subprocess, sys, threading
sys.argv = ["/venv/bin/conform", "run", "reference:Assembler", "-q"]
asked = []

def refuse(name):
    def call(*args, **kwargs):
        asked.append(name)
        raise RuntimeError(name + " while importing")
    return call

for module, names in [
    (os, ["fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"]),
    (subprocess.Popen, ["__init__"]),
    (threading.Thread, ["start"]),
]:
    for name in names:
        if hasattr(module, name):
            setattr(module, name, refuse(f"{getattr(module, '__name__', module)}.{name}"))

import harness
first = sorted(m for m in sys.modules if m.startswith("harness."))
for info in pkgutil.walk_packages(harness.__path__, "harness."):
    if not info.name.endswith(".__main__"):
        importlib.import_module(info.name)
children = []
for task in os.listdir(f"/proc/{os.getpid()}/task"):
    with open(f"/proc/{os.getpid()}/task/{task}/children") as file:
        children += file.read().split()
print(json.dumps({"first": first, "asked": asked, "children": children,
                  "threads": threading.active_count()}))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_importing_the_harness_starts_nothing() -> None:
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    # `import harness` loads none of its modules (names are loaded on first use) ...
    assert seen["first"] == []
    # ... and neither it nor any module of it starts a process or a thread, even under the
    # command line of `conform run TARGET`: the head start is the command's (harness.cli).
    assert seen["asked"] == [] and seen["children"] == [] and seen["threads"] == 1
