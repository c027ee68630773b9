"""`conform run` fails each miniature at the field its broken rule governs; the reference passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import conform
from tests.miniatures import BATTERY, PITFALLS, REAL_CLIENTS, SUITE_POWER

MINIATURES = str(Path(__file__).resolve().parents[1] / "miniatures.py")


def test_the_reference_passes_every_case_in_every_mode() -> None:
    code, output = conform("run", "reference:Assembler")
    assert code == 0, output
    assert re.search(r"totals: \d+ passed \(", output), output


@pytest.mark.parametrize("name", sorted(BATTERY))
def test_each_miniature_fails_where_its_rule_is(name: str) -> None:
    # In-process: a worker would only add its start (tests/drive/ checks workers report the same).
    mode, pattern = BATTERY[name]
    code, output = conform("run", f"{MINIATURES}:{name}", "--mode", mode, "--in-process")
    assert code == 1, output
    assert re.search(pattern, output), f"{name}: no mismatch matching {pattern!r} in:\n{output}"


def test_a_target_that_rejects_unknown_fields_passes_plain_and_fails_unknown_fields() -> None:
    target = f"{MINIATURES}:RejectsUnknownFields"
    code, output = conform("run", target, "--mode", "plain", "--in-process")
    assert code == 0, output
    code, output = conform("run", target, "--mode", "unknown-fields", "--in-process")
    assert code == 1
    assert "[unknown-fields]" in output and "[plain]" not in output


def _block(output: str, case_id: str) -> str:
    """The report's lines for one failing case (its FAIL line and the mismatches under it)."""
    found = re.search(rf"^FAIL {re.escape(case_id)} \[plain\].*\n((?:[ \t].*\n)*)", output, re.M)
    return found.group(0) if found else ""


def test_the_pitfall_miniatures_reader_alone_passes() -> None:
    # Reading with json and handing the reference plain JSON changes nothing by itself, so each
    # pitfall miniature below fails through its pitfall only.
    code, output = conform("run", f"{MINIATURES}:_Reads", "--mode", "plain", "--in-process")
    assert code == 0, output


@pytest.mark.parametrize("name", sorted(PITFALLS))
def test_each_language_pitfall_fails_on_its_case(name: str) -> None:
    # Its case alone: the property is that case's failure (the whole suite would only add the
    # other cases' passes; test_the_pitfall_miniatures_reader_alone_passes runs them all).
    case_id, pattern = PITFALLS[name]
    code, output = conform(
        "run", f"{MINIATURES}:{name}", "--mode", "plain", "--in-process", "-k", case_id
    )
    assert code == 1, output
    block = _block(output, case_id)
    assert block, f"{name}: {case_id} did not fail:\n{output}"
    assert re.search(pattern, block), f"{name}: no mismatch matching {pattern!r} in:\n{block}"


@pytest.mark.parametrize("name", sorted(REAL_CLIENTS))
def test_each_real_client_bug_fails_on_its_case(name: str) -> None:
    case, pattern = REAL_CLIENTS[name]
    case_id = f"synthetic/{case}"
    code, output = conform(
        "run", f"{MINIATURES}:{name}", "--mode", "plain", "--in-process", "-k", case_id
    )
    assert code == 1, output
    found = re.search(
        rf"^(?:FAIL|CRASH) {re.escape(case_id)} \[plain\].*\n((?:[ \t].*\n)*)", output, re.M
    )
    assert found, f"{name}: {case_id} did not fail:\n{output}"
    assert re.search(pattern, found.group(0)), f"{name}: no {pattern!r} in:\n{found.group(0)}"


def test_the_real_client_helpers_alone_pass() -> None:
    # `_Calls` rebuilds the tool calls from the events as R2 says; unchanged, it passes, so each
    # miniature built on it fails through its own change only.
    code, output = conform("run", f"{MINIATURES}:_Calls", "--in-process")
    assert code == 0, output


@pytest.mark.parametrize("name", sorted(SUITE_POWER))
def test_each_planted_bug_of_issue_34_fails_for_its_reason(name: str) -> None:
    # A lax decoder's coercion, a near-name read, an edge text or id mishandled, a tool-call
    # combination mishandled: each fails where the case or mode built for its class is.
    cases, mode, pattern = SUITE_POWER[name]
    code, output = conform(
        "run", f"{MINIATURES}:{name}", "--mode", mode, "--in-process", "-k", cases
    )
    assert code == 1, output
    assert re.search(pattern, output), f"{name}: no {pattern!r} in:\n{output}"


@pytest.mark.parametrize("name", ["ReadsCamelCase", "MatchesKeysWithoutCase",
                                  "TopLevelMessageIsError", "SkipsPingEvents",
                                  "ContentFromAnotherLevel"])  # fmt: skip
def test_the_near_name_bugs_pass_the_plain_real_captures(name: str) -> None:
    # What catches them is the names unknown-fields adds, not the recordings.
    code, output = conform(
        "run", f"{MINIATURES}:{name}", "--mode", "plain", "--in-process", "-k", "llama-server/*"
    )
    assert code == 0, output
