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
    result = invoke("run", f"{miniature}:DropsProgress", "--in-process", "-k", "llama-server",
                    "--mode", "plain", "--badge", str(path))  # fmt: skip
    assert result.exit_code == 1
    document = json.loads(path.read_text(encoding="utf-8"))
    check(document)
    assert document["color"] == "red" and document["message"].endswith("cases (full)")
