"""The verdict by class of input (docs/spec.md section 10): every report gives each class its own
totals, real captures apart, and says in words what kind of input a target gets wrong. A target
that assembles every valid stream right and accepts all invalid input is told exactly that."""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.suite.cases import Suite
from harness.suite.classes import InputClass
from harness.suite.golden import open_golden
from harness.suite.recording import read_info
from tests.conftest import invoke
from tests.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
#: By module: imported once (by file, each run would compile tests/miniatures.py anew).
LAX = "tests.miniatures:AcceptsInvalidInput"
SCHEMA = json.loads((ROOT / "harness/schemas/report.schema.json").read_text(encoding="utf-8"))
MATRIX_SCHEMA = json.loads((ROOT / "harness/schemas/matrix.schema.json").read_text("utf-8"))


@functools.cache
def _expected() -> dict[str, tuple[int, int]]:
    """Per class, (cases, real captures) of the shipped suite, from its golden files: the
    totals stay true as the corpus grows."""
    found: dict[str, tuple[int, int]] = {str(c): (0, 0) for c in InputClass}
    for case in Suite.open(None).cases():
        kind = str(open_golden(case).input_class)
        cases, real = found[kind]
        found[kind] = (cases + 1, real + read_info(case.recording).real)
    return found


@pytest.fixture(scope="module")
def lax(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("lax")
    paths = {name: folder / name for name in ("r.json", "j.xml", "b.json")}
    result = invoke("run", LAX, "--in-process", "--mode", "plain", "--json", paths["r.json"],
                    "--junit-xml", paths["j.xml"], "--badge", paths["b.json"])  # fmt: skip
    return {"result": result, "paths": paths}


def test_the_lax_target_is_told_exactly_what_it_does(lax: dict[str, Any]) -> None:
    expected = _expected()
    valid, real = expected["valid"]
    invalid, _ = expected["invalid"]
    defined, _ = expected["implementation-defined"]
    words = (
        f"assembles every valid stream right ({valid}/{valid} cases, {real} real captures); "
        f"accepts all invalid input ({invalid} cases); takes an allowed outcome on every "
        f"implementation-defined case ({defined}/{defined}; another than the reference's on "
    )
    # The contract requires protocol for invalid input: the run fails, and says what kind.
    result = lax["result"]
    assert result.exit_code == 1
    lines = result.output.splitlines()
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert verdict.startswith(f"verdict: {words}")
    by_class = next(line for line in lines if line.startswith("by class"))
    assert by_class == (
        f"by class (cases conforming): valid {valid}/{valid} (real captures {real}/{real}), "
        f"invalid 0/{invalid} FAIL, implementation-defined {defined}/{defined}"
    )
    report = json.loads(lax["paths"]["r.json"].read_text(encoding="utf-8"))
    validate(report, SCHEMA)
    assert report["verdict"].startswith(words)
    assert report["classes"]["valid"]["real"] == {"cases": real, "passed": real, "failed": 0}
    assert report["classes"]["invalid"]["accepted"] == invalid
    assert {r["class"] for r in report["results"]} == set(expected)
    suite = ET.parse(lax["paths"]["j.xml"]).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["class.invalid"] == f"0/{invalid} cases conforming"
    assert str(props["verdict"]).startswith(words)
    badge = json.loads(lax["paths"]["b.json"].read_text(encoding="utf-8"))
    assert (badge["message"], badge["color"]) == (
        "valid streams right, accepts all invalid input (full)",
        "orange",
    )
    # Its problems are all invalid input it did not refuse, one per kind of invalid input.
    assert {p["category"] for p in report["problems"]} == {"invalid-accepted"}
    assert len(report["problems"]) > 10


def test_the_matrix_says_it_too(lax: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    md = tmp_path / "m.md"
    html = tmp_path / "m.html"
    code = invoke("matrix", "--from", f"lax={lax['paths']['r.json']}", "--json", out,
                  "--markdown", md, "--html", html).exit_code  # fmt: skip
    assert code == 1
    data = json.loads(out.read_text(encoding="utf-8"))
    validate(data, MATRIX_SCHEMA)
    (target,) = data["targets"]
    assert target["in_words"].startswith("assembles every valid stream right (")
    assert "accepts all invalid input" in target["in_words"]
    text = md.read_text(encoding="utf-8")
    valid, real = _expected()["valid"]
    assert f"| **valid streams** | {valid}/{valid} (real {real}/{real}) |" in text
    assert "| **invalid input** | 0/" in text
    assert "- `lax` assembles every valid stream right" in text
    assert "accepts all invalid input" in html.read_text(encoding="utf-8")
    # --class gates on one class: the same report, valid streams only, conforms.
    only = invoke("matrix", "--from", f"lax={lax['paths']['r.json']}", "--class", "valid")
    assert only.exit_code == 0, only.output


def test_gating_on_valid_streams_is_class_valid() -> None:
    result = invoke("run", LAX, "--in-process", "--mode", "plain", "--class", "valid", "-q")
    assert result.exit_code == 0, result.output


def test_the_reference_is_right_on_every_class() -> None:
    result = invoke("run", "reference:Assembler", "--in-process", "--mode", "plain")
    assert result.exit_code == 0
    verdict = next(line for line in result.output.splitlines() if line.startswith("verdict: "))
    assert "assembles every valid stream right (" in verdict
    assert "refuses every invalid input (" in verdict
    assert "takes an allowed outcome on every implementation-defined case (" in verdict
    assert "another than the reference's" not in verdict


def test_a_run_in_a_mutation_mode_keeps_its_cases_class(tmp_path: Path) -> None:
    # hostile-keys adds members named __proto__, which a target may refuse (I6): that is the
    # mode's allowance, not the recording's question, so a valid case stays valid input there,
    # and a target that fails on the mode's unknown members fails on valid input, under a
    # mutation mode (docs/spec.md section 10).
    report = tmp_path / "r.json"
    target = "tests.miniatures:RejectsUnknownFields"
    invoke("run", target, "--in-process", "-k", "llama-server/content_stop", "--mode", "plain",
           "--mode", "hostile-keys", "--mode", "truncated", "--json", report)  # fmt: skip
    data = json.loads(report.read_text(encoding="utf-8"))
    assert {(r["mode"], r["class"]) for r in data["results"]} == {
        ("plain", "valid"),
        ("hostile-keys", "valid"),
        ("truncated", "valid"),
    }
    assert [p["category"] for p in data["problems"]] == ["valid-under-mutation"]
    assert data["verdict"] == (
        "gets 1 of 1 valid streams wrong only under a mutation mode (1 of 1 real captures)"
    )
