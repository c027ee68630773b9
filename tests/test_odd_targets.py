"""Every odd target of the tests is in one place: a miniature registered in tests/miniatures.py,
or listed in its ELSEWHERE with why it lives apart. A class of tests/ that assembles (has a
`push`, or extends the reference or a target), in a module or in source a test writes, is one."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.miniatures import ELSEWHERE, MINIATURES

ROOT = Path(__file__).resolve().parents[1]
#: The names a target class extends (the reference, the miniatures' delegating base).
TARGET_BASES = {"Assembler", "_Base", "Delegating", "_Wrapper", "Reference", "_Reference"}


def _targets(tree: ast.AST) -> set[str]:
    """The classes of `tree` that assemble: with a `push`, or extending a target."""
    found: set[str] = set()
    known = set(TARGET_BASES)
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    grown = True
    while grown:
        grown = False
        for node in classes:
            bases = {
                b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases
            }
            methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            if node.name not in found and (bases & known or "push" in methods):
                found.add(node.name)
                known.add(node.name)
                grown = True
    return found


def _sources(tree: ast.AST) -> list[ast.AST]:
    """`tree` and the Python source a test writes out (string constants that parse)."""
    trees = [tree]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "class " in node.value
        ):
            try:
                trees.append(ast.parse(node.value))
            except SyntaxError:
                continue
    return trees


def test_every_odd_target_is_registered_or_listed() -> None:
    unlisted = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "tests/miniatures.py" or relative.startswith("tests/tools/"):
            continue  # (tests/tools/ holds generators: their streams are no targets)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = set().union(*(_targets(t) for t in _sources(tree)))
        listed = set(ELSEWHERE.get(relative, ((), ""))[0])
        if found - listed:
            unlisted[relative] = sorted(found - listed)
    assert unlisted == {}, "register these in tests/miniatures.py or list them in ELSEWHERE"


def test_every_listed_target_exists() -> None:
    for where, (names, why) in ELSEWHERE.items():
        assert why, where
        path = ROOT / where
        if path.is_dir():
            assert all((path / f"{name}.py").is_file() for name in names), where
        else:
            text = path.read_text(encoding="utf-8")
            assert all(f"class {name}" in text for name in names), where


def test_no_miniature_is_listed_elsewhere() -> None:
    elsewhere = {name for names, _ in ELSEWHERE.values() for name in names}
    assert not elsewhere & set(MINIATURES) - {"Assembler", "Target"}
