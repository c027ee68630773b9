"""Reports that never break: hostile values through every report, folding, the target's own error
words, and exit status 3 for an error inside conform.

Each hostile target runs as a real `conform` process (so stdout's own encoding is in play), with
text, --json, --junit-xml and the GitHub Actions output at once: exit 1, never a traceback. Then it
writes a baseline and runs gated by it, in-process (a `conform` start is 0.4 s of CPU; what the
gated run adds, the baseline's hostile reasons read back and xfailed results in every report, goes
through the same writers and the same escaping whatever stdout is): exit 0, the reports as sound.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from harness.check.results import CaseResult
from harness.pipeline import run as pipeline_run
from harness.pipeline.run import INTERNAL_ERROR
from harness.reports.text import fold, render
from harness.safetext import capped, printable, quoted
from tests.conftest import invoke
from tests.reports.hostile_targets import HUGE, MAX_REPORT_BYTES
from tests.schemas import validate

TESTS = Path(__file__).resolve().parents[1]
PROGRAMS = TESTS / "programs"
CASE = ("-k", "llama-server/content_stop", "--mode", "plain", "--mode", "key-order")
#: The Python targets, in a module of their own: a `conform` process or a worker imports it alone,
#: not this file (pytest, jsonschema and the command line: 0.3 s of CPU each time).
TARGETS = TESTS / "reports" / "hostile_targets.py"


def _actions(tmp: Path) -> dict[str, str]:
    """GitHub Actions' environment: annotations on stdout, a job summary."""
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_WORKSPACE": str(tmp),
    }


def _conform(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        **_actions(tmp),
        "PYTHONIOENCODING": "utf-8",  # strict: a lone surrogate on stdout would raise
    }
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        env=env,
        cwd=TESTS.parent,
        timeout=600,
        check=False,
    )


def _schema() -> Any:
    text = resources.files("harness").joinpath("schemas/report.schema.json").read_text("utf-8")
    return json.loads(text)


def _check_reports(tmp: Path, stdout: bytes, stderr: bytes) -> None:
    assert "Traceback" not in stderr.decode("utf-8"), stderr.decode("utf-8")[-3000:]
    stdout.decode("utf-8")  # strict: valid UTF-8
    document = json.loads((tmp / "r.json").read_text("utf-8"))
    validate(document, _schema())
    ET.parse(tmp / "r.xml")
    (tmp / "summary.md").read_text("utf-8")
    sizes = [len(stdout)] + [(tmp / n).stat().st_size for n in ("r.json", "r.xml")]
    assert sum(sizes) < MAX_REPORT_BYTES, sizes


HOSTILE = [
    pytest.param(
        ("--exec", shlex.join([sys.executable, str(PROGRAMS / "hostile.py")])),
        kind,
        id=f"exec-{kind}",
    )
    for kind in ("surrogate", "huge", "deep", "deepish", "errtext")
] + [
    pytest.param((f"{TARGETS}:Surrogates",), "", id="python-surrogates"),
    pytest.param((f"{TARGETS}:HugeText", "--in-process"), "", id="python-huge"),
]


@pytest.mark.parametrize(("target", "kind"), HOSTILE)
def test_a_hostile_target_goes_through_every_report_with_exit_1_then_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: tuple[str, ...], kind: str
) -> None:
    monkeypatch.setenv("HOSTILE", kind)
    monkeypatch.setenv("HOSTILE_HUGE", str(HUGE))
    reports = ("--json", str(tmp_path / "r.json"), "--junit-xml", str(tmp_path / "r.xml"))
    first = _conform(tmp_path, "run", *target, *CASE, *reports)
    assert first.returncode == 1, first.stderr.decode()[-3000:]
    _check_reports(tmp_path, first.stdout, first.stderr)
    assert b"::error " in first.stdout

    baseline = tmp_path / "conform.xfail"  # written in-process: only the gated run's reports count
    written = invoke("run", *target, *CASE, "--write-xfail", str(baseline))
    assert written.exit_code == 0 and baseline.is_file(), written.output[-3000:]
    (tmp_path / "summary.md").unlink()
    gated = invoke(
        "run", *target, *CASE, *reports, "--xfail", str(baseline), env=_actions(tmp_path)
    )
    assert gated.exit_code == 0, gated.output[-3000:]
    assert "XFAIL " in gated.output and "::error " not in gated.output
    _check_reports(tmp_path, gated.stdout_bytes, gated.stderr_bytes)


def test_values_are_escaped_and_cut_saying_how_much() -> None:
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    value = capped({"text": "x" * 10_000_000, "deep": deep}, chars=100, depth=8)
    assert value["text"].endswith("… (10,000,000 chars, 9,999,900 cut)")
    text = json.dumps(value)
    assert "(9,994 more levels cut)" in text and len(text) < 1_000
    assert printable("a\ud800b\x1b\x00\n") == "a\\ud800b\\x1b\\x00\\x0a"
    assert quoted("é" * 5_000, 10) == '"éééééééééé" … (5,000 chars, 4,990 cut)'


def test_identical_failures_across_modes_fold_into_one_block() -> None:
    # The R1 cases: where ContentBeforeReasoning fails, alike in every mode (the rest only pass).
    modes = ("--mode", "plain", "--mode", "key-order", "--mode", "whitespace")
    target = f"{TESTS / 'miniatures.py'}:ContentBeforeReasoning"
    out = invoke("run", target, "--in-process", *modes, "-k", "synthetic/r1_*")
    assert out.exit_code == 1
    headers = [line for line in out.output.splitlines() if line.startswith("FAIL ")]
    assert headers and all("[plain, key-order, whitespace]" in h for h in headers), headers
    assert "payload pushed" not in out.output  # the same failure in plain: payloads are no cause


def test_a_mode_failing_alone_quotes_the_payload_it_changed() -> None:
    out = invoke(
        "run", f"{TESTS / 'miniatures.py'}:FinishReasonByRegex", "--in-process",
        "--mode", "plain", "--mode", "whitespace", "-k", "llama-server/*",  # where it fails
    )  # fmt: skip
    assert out.exit_code == 1
    assert "[whitespace]" in out.output and "[plain" not in out.output
    assert "payload pushed at line" in out.output


def test_a_mismatching_error_step_shows_the_targets_kind_and_message() -> None:
    out = invoke(
        "run", f"{TESTS / 'miniatures.py'}:ServerErrorAsProtocol", "--mode", "plain",
        "-k", "*server_error*",
    )  # fmt: skip
    assert out.exit_code == 1
    said = [line for line in out.output.splitlines() if "the target raised protocol: " in line]
    assert said, out.output


def _results_then_a_bug(*args: Any, **kwargs: Any) -> Iterator[CaseResult]:
    yield CaseResult("llama-server/content_stop", "plain", "llama-server/content_stop.http",
                     "passed", 0.01)  # fmt: skip
    raise RuntimeError("a bug in conform")


def test_an_error_inside_conform_exits_3_with_the_reports_of_the_cases_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_run, "run_parallel", _results_then_a_bug)
    report = tmp_path / "r.json"
    out = invoke(
        "run", "reference:Assembler", "--in-process", "-k", "llama-server/content_stop",
        "--mode", "plain", "--json", report,
    )  # fmt: skip
    assert out.exit_code == INTERNAL_ERROR == 3
    assert "RuntimeError: a bug in conform" in out.output
    assert "This is a bug in conform" in out.output and "Please report it" in out.output
    document = json.loads(report.read_text("utf-8"))
    assert document["stopped"] == "RuntimeError: a bug in conform"
    assert document["ok"] is False and len(document["results"]) == 1
    validate(document, _schema())


def test_render_folds_only_the_same_case() -> None:
    results = [
        CaseResult(case, mode, f"{case}.sse", "failed", 0.0)
        for case in ("a", "b")
        for mode in ("plain", "key-order")
    ]
    assert [f.modes for f in fold(results)] == [("plain", "key-order")] * 2
    assert render(results)[0].startswith("FAIL a [plain, key-order]")
