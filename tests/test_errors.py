"""The error tree: every error the harness raises is in `harness.errors`, drawn in its docstring,
and only the CLI's one handler prints `Error:` lines or exits."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import harness
from harness import errors

HARNESS = Path(harness.__file__).parent


def _error_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages([str(HARNESS)], "harness."):
        if info.name in ("harness.plugin", "harness.suite.snapshot"):
            continue  # pytest-only modules
        if info.name.endswith(".__main__"):
            continue  # a program (`python -m harness`, `python -m harness.adapter`)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.ConformError)
                and value.__module__ == info.name
            ):
                found[name] = value
    return found


def test_every_conform_error_lives_in_errors_and_is_drawn() -> None:
    classes = _error_classes()
    assert {"ConformError", "RecordError", "WriteError"} <= set(classes)
    for name, cls in classes.items():
        assert cls.__module__ == "harness.errors", f"{name} is defined in {cls.__module__}"
        assert f" {name} " in (errors.__doc__ or ""), f"{name} is not in the tree"
    assert "Interrupted" in (errors.__doc__ or "")


def test_exit_codes_of_the_tree() -> None:
    assert errors.ConformError("x").exit_code == 2
    assert errors.WriteError(Path("p"), "x").exit_code == 2
    assert errors.RecordError("x").exit_code == 1
    assert errors.Interrupted(15).exit_code == 143


def test_capture_never_prints_an_error_or_exits() -> None:
    for path in sorted((HARNESS / "capture").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "Error: " not in text.replace('"Error: "', ""), path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr == "exit":
                raise AssertionError(f"{path.name}:{node.lineno}: sys.exit outside the CLI")
        assert len(text.splitlines()) <= 500, path
