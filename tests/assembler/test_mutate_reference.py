"""tests/tools/mutate_reference.py: mutants are what they say, run in isolation, get killed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

import reference

SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "tools" / "mutate_reference.py"


@pytest.fixture(scope="module")
def mutate() -> Any:
    spec = importlib.util.spec_from_file_location("mutate_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_reference"] = module
    spec.loader.exec_module(module)
    return module


def _find(mutate: Any, line: str, after: str, module: str = "assembler") -> Any:
    found = [m for m in mutate.mutants(module) if m.line == line and m.after == after]
    assert len(found) == 1, found
    return found[0]


def test_every_operator_makes_mutants(mutate: Any) -> None:
    operators = {m.operator for name in mutate.MODULES for m in mutate.mutants(name)}
    assert operators == {
        "and_or", "arith", "boundary", "compare", "constant", "delete", "negate", "number",
        "remove_condition",
    }  # fmt: skip


def test_a_mutant_changes_only_its_copy_and_is_killed_by_its_case(mutate: Any) -> None:
    mutant = _find(
        mutate, "if not 0 <= tokens <= MAX_SAFE_INTEGER:", "0 < tokens <= MAX_SAFE_INTEGER"
    )
    factory = mutate.load_mutant("assembler", mutate.mutated_tree(mutant), "test").Assembler
    chunk = '{"choices":[{"delta":{"reasoning_content":"x"}}],"timings":{"predicted_n":0}}'
    with pytest.raises(reference.InferError):
        factory().push(chunk)
    assert reference.Assembler().push(chunk)  # the real reference is untouched
    mutate._init_worker()
    _, _, killer = mutate._kill(("assembler", mutant.number))
    assert killer is not None and killer.startswith("synthetic/r4_predicted_n_zero [plain]")


def test_the_equivalents_file_lists_only_current_survivors_with_reasons(mutate: Any) -> None:
    listed = mutate.read_equivalents(mutate.EQUIVALENTS)
    assert listed and all(reason for reason in listed.values())
    keys = {m.key for name in mutate.MODULES for m in mutate.mutants(name)}
    assert set(listed) <= keys, set(listed) - keys


def test_a_mutant_on_a_path_only_another_choice_takes_is_killed_under_that_choice(
    mutate: Any,
) -> None:
    # I2 `exact` reads 9007199254740993.0 from the payload's text; the mutant never does.
    mutant = _find(mutate, "return int(exact)", "return None", module="shape")
    mutate._init_worker()
    _, _, killer = mutate._kill(("shape", mutant.number))
    assert killer is not None and ", I2=exact]" in killer, killer


def test_a_changed_default_choice_is_not_what_a_mutant_is_run_under(mutate: Any) -> None:
    tree = mutate.ast.parse(mutate._source("choices"))
    for node in mutate.ast.walk(tree):
        if isinstance(node, mutate.ast.AnnAssign) and mutate.ast.unparse(node.target) == "I4":
            node.value = mutate.ast.Constant("protocol")  # Choices.I4's default
    loaded = mutate.load_mutant("choices", tree, "default")
    assert loaded.REFERENCE.I4 == "protocol" and reference.Assembler()._choices.I4 == "last"
    told = loaded.REFERENCE.replace(mutate.CONFIGS[0])
    assert told.I4 == "last" and type(told).__module__.startswith("_mutant_")


def test_names_only_the_harness_uses_are_not_mutated(mutate: Any) -> None:
    lines = {m.line for m in mutate.mutants("choices")}
    assert lines and not any("TITLES" in line or "itertools" in line for line in lines)
    assert not any('"I1": "integral' in line for line in lines)


def test_lines_picks_the_mutants_of_a_range_and_refuses_a_bad_one(
    mutate: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    every = list(mutate.mutants("assembler"))
    first, last = every[0].lineno, every[0].lineno + 20
    expected = sum(first <= m.lineno <= last for m in every)
    assert 0 < expected < len(every)
    assert mutate.main(["--module", "assembler", "--lines", f"{first}-{last}", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1] == f"{expected} mutants"
    assert all(first <= int(row.split(":")[1].split()[0]) <= last for row in listed[:-1])
    for bad in ("x", "9-3"):
        with pytest.raises(SystemExit) as exited:
            mutate.main(["--lines", bad, "--list"])
        assert exited.value.code == 2
