"""tests/tools/mutate_harness.py: mutants of harness modules, killed by the project's own tests."""

from __future__ import annotations

import ast
import importlib.util
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "tools" / "mutate_harness.py"


@pytest.fixture(scope="module")
def mutate() -> Any:
    spec = importlib.util.spec_from_file_location("mutate_harness", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_harness"] = module
    spec.loader.exec_module(module)
    return module


def test_every_module_and_killer_exists(mutate: Any) -> None:
    for path, killers in mutate.KILLERS.items():
        assert (ROOT / path).is_file(), path
        assert killers and all((ROOT / k).is_file() for k in killers), killers
        assert list(mutate.mutants(path)), path


def test_messages_are_not_mutated(mutate: Any) -> None:
    found = list(mutate.mutants("harness/check/runner.py"))
    changed = {(m.line, m.before) for m in found if m.operator == "constant"}
    # `_stale(case, "...")` and GoldenError(...) only make messages: never mutated.
    assert not any(line.startswith("raise ") for line, _ in changed)
    # The status names are code (the JSON report's strings): mutated where they are defined.
    statuses = {(m.line, m.before) for m in mutate.mutants("harness/check/status.py")}
    assert ('PASSED = "passed"', "'passed'") in statuses


def test_a_mutant_is_its_module_with_one_change(mutate: Any) -> None:
    path = "harness/check/compare.py"
    (mutant,) = [m for m in mutate.mutants(path) if m.line.startswith("if not found:")
                 and m.operator == "negate"]  # fmt: skip
    source = mutate.mutated_source(mutant)
    compile(source, path, "exec")
    original = ast.unparse(ast.parse((ROOT / path).read_text(encoding="utf-8")))
    differing = [
        (a, b) for a, b in zip(original.splitlines(), source.splitlines(), strict=True) if a != b
    ]
    assert differing == [("    if not found:", "    if not not found:")]


def test_the_safety_net_mutant_is_killed_and_the_real_module_is_not(
    mutate: Any, tmp_path: Path
) -> None:
    path = "harness/check/compare.py"
    line = "found.append(Difference(prefix, expected, actual))"
    (net,) = [m for m in mutate.mutants(path) if m.operator == "delete" and m.line == line]
    sigint = signal.getsignal(signal.SIGINT)
    try:
        mutate._init_worker(str(tmp_path))  # (a worker ignores Ctrl-C: its pool handles it)
    finally:
        signal.signal(signal.SIGINT, sigint)
    # The one test that kills it: the property is that _kill runs the tests against the shadow
    # copy (passing on the real module, failing on the mutant), not test_compare.py's own cost.
    killers = ("tests/check/test_compare.py::test_the_safety_net_holds_whatever_deepdiff_says",)
    assert mutate._kill((path, -1, killers))[2] is None  # the unmutated module passes
    assert mutate._kill((path, net.number, killers))[2] is not None
    assert "found.append(Difference(prefix" in (ROOT / path).read_text(encoding="utf-8")
