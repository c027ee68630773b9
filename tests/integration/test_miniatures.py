"""`conform run` fails each miniature where its registration says (tests/miniatures.py): on its
cases (or every case pinning its rule), in its mode, with a report holding its pattern; the
helpers they are built on pass, so each fails through its own change only.

Each miniature runs on the cases that must catch it, in-process: the other cases would only add
passes (tests/check/test_modes.py runs the reference on every case in every mode), a worker only
its start (tests/worker/ checks workers report the same). The targets are named by module
(`tests.miniatures:Name`), imported once for all the runs: named by file, each run would compile
the module's 3,000 lines anew (tests/cli/test_cli.py and others load targets by file).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.suite.cases import Suite, case_matches
from tests.conftest import conform
from tests.miniatures import BATTERY, CLIENT, MINIATURES, PITFALL, POWER, named

#: The miniatures' module, as a target names it (imported once, already by this test module).
MODULE = "tests.miniatures"
#: The near-name miniatures: the names `unknown-fields` adds catch them, not the recordings.
NEAR_NAMES = [
    "ReadsCamelCase",
    "MatchesKeysWithoutCase",
    "TopLevelMessageIsError",
    "SkipsPingEvents",
    "ContentFromAnotherLevel",
]


def test_the_reference_passes_through_a_worker_with_the_default_options() -> None:
    # The README's first command, on the real captures (every case: tests/check/test_modes.py).
    code, output = conform("run", "reference:Assembler", "-k", "llama-server")
    assert code == 0, output
    assert re.search(r"totals: \d+ passed \(", output), output


def _block(output: str, case_id: str) -> str:
    """The report's lines for one failing case (its FAIL or CRASH line and those under it)."""
    found = re.search(
        rf"^(?:FAIL|CRASH) {re.escape(case_id)} \[\S+\].*\n((?:[ \t].*\n)*)", output, re.M
    )
    return found.group(0) if found else ""


@pytest.mark.parametrize("name", named(BATTERY, PITFALL, CLIENT, POWER))
def test_each_miniature_fails_for_its_rule(name: str) -> None:
    catch = MINIATURES[name]
    chosen = ("-k", catch.cases) if catch.cases else ("--rule", catch.rule)
    target = f"{MODULE}:{name}"
    code, output = conform("run", target, "--mode", catch.mode, "--in-process", *chosen)
    assert code == 1, output
    one_case = catch.cases and not any(c in catch.cases for c in "*?[")
    shown = _block(output, catch.cases) if one_case else output
    assert shown, f"{name}: {catch.cases} did not fail:\n{output}"
    assert re.search(catch.pattern, shown), f"{name}: no {catch.pattern!r} in:\n{shown}"


def test_each_miniature_breaks_a_rule_its_cases_pin(suite: Suite) -> None:
    # A case caught for another rule than the one its miniature breaks would be caught for the
    # wrong reason. (The near-names are caught on the real captures by their mode's names.)
    cases = [(case.case_id, case.pins) for case in suite.cases()]
    wrong = {}
    for name, catch in MINIATURES.items():
        if catch.cases and name not in NEAR_NAMES and catch.kind != "shortcut":
            pins = {
                p for case_id, pinned in cases if case_matches(case_id, catch.cases) for p in pinned
            }
            if catch.rule not in pins:
                wrong[name] = (catch.rule, catch.cases, sorted(pins))
    assert wrong == {}


def test_each_miniature_names_a_test_that_exists() -> None:
    root = Path(__file__).resolve().parents[2]
    for name, catch in MINIATURES.items():
        path, _, function = catch.test.partition("::")
        assert f"def {function}(" in (root / path).read_text(encoding="utf-8"), (name, catch.test)


@pytest.mark.parametrize("helper", ["_Reads", "_Calls"])
def test_the_helpers_the_miniatures_are_built_on_pass(helper: str) -> None:
    # Reading with json and handing the reference plain JSON (`_Reads`), or rebuilding the tool
    # calls from the events as R2 says (`_Calls`), changes nothing by itself.
    code, output = conform("run", f"{MODULE}:{helper}", "--mode", "plain", "--in-process")
    assert code == 0, output


def test_a_target_that_rejects_unknown_fields_passes_plain_and_fails_unknown_fields() -> None:
    target = f"{MODULE}:RejectsUnknownFields"
    code, output = conform("run", target, "--mode", "plain", "--in-process", "--rule", "R7")
    assert code == 0, output
    code, output = conform(
        "run", target, "--mode", "unknown-fields", "--in-process", "--rule", "R7"
    )
    assert code == 1
    assert "[unknown-fields]" in output and "[plain]" not in output


@pytest.mark.parametrize("name", NEAR_NAMES)
def test_the_near_name_bugs_pass_the_plain_real_captures(name: str) -> None:
    code, output = conform(
        "run", f"{MODULE}:{name}", "--mode", "plain", "--in-process", "-k", "llama-server/*"
    )
    assert code == 0, output
