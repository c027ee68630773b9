"""Streamed golden files: the same document as `read_golden`'s, step by step, and the same checks.

Every test lowers `STREAM_ABOVE` so that the shipped suite's small files take the streaming path;
benchmarks/scale.py shows it on a million steps.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import reference
from harness.check.modes import MODES
from harness.check.options import RunOptions
from harness.check.parallel import run
from harness.check.results import FAILED, PASSED
from harness.drive.inprocess import InProcessDriver
from harness.errors import GoldenError
from harness.suite.cases import Suite
from harness.suite.golden import SCHEMA, build_golden, check, read_golden, serialize, update
from harness.suite.golden import stream as golden_stream

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(golden_stream, "STREAM_ABOVE", 0)


def test_the_streamed_text_is_the_serializers(suite: Suite) -> None:
    # Cases that pin an implementation-defined point are never streamed (several outcomes).
    for case in suite.cases():
        if any(pin.startswith("I") for pin in case.pins):
            continue
        text = "".join(golden_stream.iter_serialized(case, schema=SCHEMA))
        assert text == serialize(build_golden(case)), case.case_id


def test_a_streamed_document_is_read_goldens(suite: Suite) -> None:
    for case in suite.cases():
        whole = read_golden(case)
        streamed = golden_stream.read_streamed(case.golden, schema=SCHEMA)
        assert isinstance(streamed["steps"], golden_stream.GoldenSteps)
        assert list(streamed["steps"]) == whole["steps"], case.case_id
        assert list(streamed["steps"]) == whole["steps"]  # iterable again
        assert len(streamed["steps"]) == len(whole["steps"])
        assert {k: v for k, v in streamed.items() if k != "steps"} == {
            k: v for k, v in whole.items() if k != "steps"
        }


def test_read_golden_streams_large_files(suite: Suite, streaming: None) -> None:
    case = suite.cases()[0]
    assert isinstance(read_golden(case)["steps"], golden_stream.GoldenSteps)


def test_every_mode_passes_on_streamed_golden_files(suite: Suite, streaming: None) -> None:
    # The real captures, tool calls and errors mid-stream: that every streamed document reads as
    # the whole one is the test above.
    cases = suite.cases(("llama-server", "synthetic/r2_*", "synthetic/r8_*"))
    driver = InProcessDriver(reference.Assembler)
    results = list(run(cases, driver, modes=MODES, options=RunOptions(seed=1)))
    assert [(r.case_id, r.mode) for r in results if r.status != PASSED] == []


class LateId(reference.Assembler):
    """Reports no id until the third push (the state reader is wrong early on)."""

    pushes = 0

    def push(self, data: str) -> list[reference.ChatEvent]:
        LateId.pushes += 1
        return super().push(data)

    @property
    def id(self) -> str | None:
        return super().id if LateId.pushes >= 3 else None


def test_a_mismatch_on_a_streamed_file_names_its_step(suite: Suite, streaming: None) -> None:
    case = next(c for c in suite.cases() if c.case_id == "llama-server/content_stop")
    LateId.pushes = 0
    [result] = run([case], InProcessDriver(LateId), modes=["plain"], options=RunOptions(seed=1))
    assert result.status == FAILED
    assert [m.path for m in result.mismatches] == ["steps[0].state.id", "steps[1].state.id"]


# Malformed large files ----------------------------------------------------------------------------


@pytest.fixture
def big(tmp_path: Path, streaming: None) -> Path:
    """A suite of one case (a tool call: several steps) whose golden file is streamed."""
    shutil.copytree(ROOT / "recordings" / "llama-server", tmp_path / "recordings")
    for path in (tmp_path / "recordings").iterdir():
        if path.name != "tool_call.http":
            path.unlink()
    suite = Suite.open(tmp_path)
    update(suite.cases())
    return tmp_path / "golden" / "tool_call.json"


def read(golden: Path) -> None:
    suite = Suite.open(golden.parent.parent)
    [case] = suite.cases()
    document = read_golden(case)
    list(document["steps"])


def test_a_cut_file(big: Path) -> None:
    text = big.read_text()
    big.write_text(text[: len(text) // 2])
    with pytest.raises(GoldenError, match=r"tool_call\.json: .*layout conform writes"):
        read(big)


def test_invalid_json_in_a_step_names_its_line(big: Path) -> None:
    lines = big.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if '"arguments"' in line) + 1
    lines[number - 1] = lines[number - 1].replace('"arguments":', '"arguments"')
    big.write_text("".join(lines))
    with pytest.raises(GoldenError, match=rf"invalid JSON at line {number}, column \d+"):
        read(big)


def test_another_schema(big: Path) -> None:
    big.write_text(big.read_text().replace('"schema": 2', '"schema": 1', 1))
    with pytest.raises(GoldenError, match="golden schema 1 is not 2"):
        read(big)


def test_another_layout_is_refused_with_a_hint(big: Path) -> None:
    big.write_text(json.dumps(json.loads(big.read_text()), indent=4))
    with pytest.raises(GoldenError, match="layout conform writes") as info:
        read(big)
    assert info.value.hint is not None and "conform golden update" in info.value.hint


def test_a_step_without_a_line(big: Path) -> None:
    big.write_text(big.read_text().replace('"line": 19,', '"lime": 19,', 1))
    missing = r"schema at \$\.steps\[1\] \(near line \d+\): 'line' is missing"
    with pytest.raises(GoldenError, match=missing):
        read(big)


def test_no_finish(big: Path) -> None:
    text = big.read_text()
    big.write_text(text[: text.index('\n  "finish"') - 1] + "\n}\n")
    with pytest.raises(GoldenError, match="'finish' is missing"):
        read(big)


def test_update_and_check_stream_long_recordings(suite_copy: Suite, streaming: None) -> None:
    # Every tenth case: update and check take the streaming path on each alike (the streamed text
    # of every case is test_the_streamed_text_is_the_serializers').
    cases = suite_copy.cases()[::10]
    assert {c.status for c in update(cases)} == {"unchanged"}
    assert check(suite_copy, cases) == []
    deleted, edited = cases[0], cases[1]
    deleted.golden.unlink()
    edited.golden.write_text(edited.golden.read_text().replace("false", "true", 1))
    assert [(p.case_id, p.status) for p in check(suite_copy, cases)] == [
        (deleted.case_id, "missing"),
        (edited.case_id, "drifted"),
    ]
    changes = {c.case_id: c.status for c in update(cases)}
    assert changes[deleted.case_id] == "created" and changes[edited.case_id] == "changed"
    for case in (deleted, edited):
        assert case.golden.read_text(encoding="utf-8") == serialize(build_golden(case))
    assert check(suite_copy, cases) == []
