"""Every shipped case says what it pins, and its implementation-defined tags are exactly right.

A case whose outcome changes with an I-point it does not pin would gate implementations on the
reference's private choice: the suite's fairness rests on this test. The other direction (a
pinned point must change the outcome) is enforced when golden files are built.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from harness.errors import RecordingError
from harness.suite.cases import Case, Suite
from harness.suite.golden import build_golden
from reference.choices import OUTCOMES, REFERENCE, Choices
from tests.folds import each, parts

ROOT = Path(__file__).resolve().parents[2]
SUITE_CASES = Suite(ROOT).cases()


class _Outcomes:
    """The reference's steps and finish on one case's recording, as JSON text, under any choices
    (the recording read once; the same choices are reached from many points and bases: each is
    run once)."""

    def __init__(self, case: Case) -> None:
        self.pins = case.pins
        self.capped = case.info.thinking_capped
        self.payloads = [(payload.data, payload.line) for payload in case.payloads()]
        self.seen: dict[Choices, str] = {}

    def under(self, point: str, value: str, base: dict[str, str]) -> str:
        choices = REFERENCE.replace({**base, point: value})
        if choices not in self.seen:
            self.seen[choices] = self._run(choices)
        return self.seen[choices]

    def _run(self, choices: Choices) -> str:
        import reference
        from harness.drive.inprocess import finish_step, push_step

        assembler = reference.Assembler(choices)
        steps = []
        for data, line in self.payloads:
            steps.append(push_step(assembler, data, line))
            if "error" in steps[-1]:
                return json.dumps(steps)
        return json.dumps([steps, finish_step(assembler, self.capped)])


def pins_exactly_what_its_outcome_depends_on(case: Case) -> None:
    outcomes = _Outcomes(case)
    assert outcomes.pins, f"{case.recording} has no 'pins:' line"
    # A point may matter only beside another pinned point's other outcome (an integer beyond
    # 2^53 read exactly, and only then a deep value ignored): each point is flipped from the
    # reference's choices and from every combination of the case's other pinned points.
    pinned = [p for p in OUTCOMES if p in outcomes.pins]
    bases = [dict(zip(pinned, values, strict=True))
             for values in itertools.product(*(OUTCOMES[p] for p in pinned))]  # fmt: skip
    wrong = []
    for point, values in OUTCOMES.items():
        depends = False
        for base in bases or [{}]:
            base = {p: v for p, v in base.items() if p != point}
            own = outcomes.under(point, getattr(REFERENCE, point), base)
            if any(outcomes.under(point, v, base) != own for v in values):
                depends = True
                break
        if depends != (point in outcomes.pins):
            wrong.append(f"{'depends' if depends else 'does not depend'} on {point}")
    assert not wrong, f"its outcome {', '.join(wrong)}, but its pins are {' '.join(outcomes.pins)}"


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py
@pytest.mark.parametrize("cases", parts([(case.case_id, case) for case in SUITE_CASES]))
def test_a_case_pins_exactly_the_points_its_outcome_depends_on(
    cases: list[tuple[str, Case]],
) -> None:
    each(cases, pins_exactly_what_its_outcome_depends_on)


def test_a_pinned_point_that_changes_nothing_is_refused(tmp_path: Path) -> None:
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "x.sse").write_text(
        ': pins: R1 I4\ndata: {"id":"a","choices":[{"delta":{"content":"hi"},'
        '"finish_reason":"stop"}]}\n\n'
    )
    case = Suite(tmp_path).cases()[0]
    with pytest.raises(RecordingError, match="pins I4, but every outcome of I4 gives the same"):
        build_golden(case)


def test_alternatives_hold_every_other_outcome(suite: Suite) -> None:
    case = next(
        c for c in suite.cases() if c.case_id == "synthetic/r6_progress_beyond_safe_integer"
    )
    golden = build_golden(case)
    assert golden["choices"] == [{"I2": "protocol"}, {"I2": "double"}]
    assert [a["choices"] for a in golden["alternatives"]] == [[{"I2": "exact"}]]
    assert "error" in golden["steps"][-1] and "error" not in golden["alternatives"][0]["steps"][-1]
