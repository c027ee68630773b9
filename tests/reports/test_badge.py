"""The status badge (`harness/reports/badge.py`) follows shields.io's endpoint schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import jsonschema
import pytest

from harness.check.results import CaseResult
from harness.reports.badge import badge, badge_json

# shields.io's endpoint schema (https://shields.io/badges/endpoint-badge): schemaVersion 1, label
# and message required (message non-empty), the rest optional and typed.
ENDPOINT_SCHEMA = {
    "type": "object",
    "required": ["schemaVersion", "label", "message"],
    "properties": {
        "schemaVersion": {"const": 1},
        "label": {"type": "string"},
        "message": {"type": "string", "minLength": 1},
        "color": {"type": "string", "minLength": 1},
        "labelColor": {"type": "string"},
        "isError": {"type": "boolean"},
        "namedLogo": {"type": "string"},
        "logoSvg": {"type": "string"},
        "logoColor": {"type": "string"},
        "logoWidth": {"type": "integer"},
        "style": {"type": "string"},
        "cacheSeconds": {"type": "integer"},
    },
    "additionalProperties": False,
}


def result(case: str, status: object, mode: str = "plain") -> CaseResult:
    return CaseResult(case, mode, f"{case}.sse", status, 0.0)  # type: ignore[arg-type]


def check(document: dict[str, object]) -> None:
    jsonschema.validate(document, ENDPOINT_SCHEMA)


def test_every_case_conforming_is_green() -> None:
    doc = badge(
        [result("a", "passed"), result("a", "passed", "truncated"), result("b", "passed")],
        label="my-asm",
        level="full",
    )
    check(doc)
    assert doc == {
        "schemaVersion": 1,
        "label": "my-asm",
        "message": "conforms (full)",
        "color": "brightgreen",
    }


def test_a_case_counts_only_when_it_passes_in_every_mode() -> None:
    doc = badge(
        [
            result("a", "passed"),
            result("a", "failed", "truncated"),
            result("b", "passed"),
            result("c", "crashed"),
        ],
        label="x",
        level="completion",
    )
    check(doc)
    assert doc["message"] == "1/3 cases (completion)"
    assert doc["color"] == "red"


def test_meeting_the_baseline_is_not_conforming() -> None:
    doc = badge([result("a", "passed"), result("b", "xfailed")], label="x", level="full")
    check(doc)
    assert doc["message"] == "1/2 cases (full, baseline)"
    assert doc["color"] == "yellow"


@pytest.mark.parametrize("status", ["xpassed", "timed-out", "failed"])
def test_anything_that_fails_the_run_is_red(status: str) -> None:
    doc = badge([result("a", "passed"), result("b", status)], label="x")
    check(doc)
    assert doc["color"] == "red"


def test_status_enums_are_read_by_value() -> None:
    class Status(Enum):
        PASSED = "passed"
        XFAILED = "xfailed"

    @dataclass
    class Record:
        case_id: str
        status: Status

    doc = badge([Record("a", Status.PASSED), Record("b", Status.XFAILED)], label="x")
    assert doc["message"] == "1/2 cases (full, baseline)"


def test_no_results_is_grey_and_still_valid() -> None:
    doc = badge([], label="")
    check(doc)
    assert doc["label"] == "conform"
    assert doc["color"] == "lightgrey"


def test_the_file_text_is_one_json_document_with_a_newline() -> None:
    text = badge_json([result("a", "passed")], label="ü", level="full")
    assert text.endswith("}\n")
    check(json.loads(text))
    assert "ü" in text


def test_a_partial_run_is_grey_whatever_passed() -> None:
    results = [CaseResult("a", "plain", "a.sse", "passed", 0.0)]
    document = badge(results, label="conform", level="full", partial="interrupted")
    check(document)
    assert document["color"] == "lightgrey" and "partial: interrupted" in document["message"]


def test_conform_run_writes_the_badge(tmp_path: Path) -> None:
    from tests.conftest import invoke

    path = tmp_path / "badge.json"
    miniature = Path(__file__).resolve().parents[1] / "miniatures.py"
    result = invoke(
        "run",
        f"{miniature}:DropsProgress",
        "--in-process",
        "-k",
        "llama-server",
        "--mode",
        "plain",
        "--badge",
        str(path),
    )
    assert result.exit_code == 1
    document = json.loads(path.read_text(encoding="utf-8"))
    check(document)
    # Its results carry their class: the valid ones fail, in words.
    assert document["color"] == "red" and document["message"] == "valid 6/9 (full)"


def classed(case: str, status: str, kind: str, mode: str = "plain", **more: object) -> CaseResult:
    return CaseResult(case, mode, f"{case}.sse", status, 0.0, input_class=kind, **more)  # type: ignore[arg-type]


def _accepted(case: str) -> CaseResult:
    from harness.check.results import Mismatch
    from harness.safetext import ABSENT

    miss = Mismatch("steps[2].error", {"kind": "protocol"}, ABSENT, 2, 9)
    return classed(case, "failed", "invalid", mismatches=(miss,))


def test_only_invalid_input_failing_is_orange_and_says_what_kind() -> None:
    # The contract requires protocol there: the run fails (exit 1), but the badge says the
    # valid streams are right and what the target does with invalid input.
    doc = badge(
        [classed("v", "passed", "valid"), _accepted("i"), classed("j", "passed", "invalid")],
        label="x",
    )
    check(doc)
    assert doc["message"] == "valid streams right, invalid 1/2 (full)"
    assert doc["color"] == "orange"
    every = badge([classed("v", "passed", "valid"), _accepted("i"), _accepted("j")], label="x")
    assert every["message"] == "valid streams right, accepts all invalid input (full)"
    assert every["color"] == "orange"


def test_a_failing_valid_or_implementation_defined_case_is_red() -> None:
    for kind in ("valid", "implementation-defined"):
        doc = badge([classed("a", "failed", kind), _accepted("i")], label="x")
        assert doc["color"] == "red", doc


def test_a_baseline_that_only_expects_invalid_input_to_fail_is_yellow_and_says_so() -> None:
    doc = badge([classed("v", "passed", "valid"), classed("i", "xfailed", "invalid")], label="x")
    assert doc == {**doc, "message": "valid streams right, invalid 0/1 (full, baseline)"}
    assert doc["color"] == "yellow"


def test_the_lax_miniature_is_told_exactly_that(tmp_path: Path) -> None:
    from tests.conftest import invoke

    path = tmp_path / "badge.json"
    miniature = Path(__file__).resolve().parents[1] / "miniatures.py"
    some = ("-k", "llama-server", "-k", "synthetic/r6_*", "-k", "synthetic/i3_*", "--mode", "plain")
    result = invoke(
        "run", f"{miniature}:AcceptsInvalidInput", "--in-process", *some, "--badge", str(path)
    )
    assert result.exit_code == 1
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["message"] == "valid streams right, accepts all invalid input (full)"
    assert document["color"] == "orange"
