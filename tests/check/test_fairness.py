"""Gating is fair: an implementation that takes another allowed outcome at an implementation-
defined point passes by default, and fails --strict (or --choose of the reference's outcome) only
on cases that pin that point, with the point named in the report. The careful clients (one for
each outcome the reference does not take at I5 to I9) are checked so in every mode
(`hostile-keys` adds `__proto__` members to every case), and fail --strict on exactly the cases
that pin their point where their outcome is not the reference's (a case pinning I7 for its
`protocol` outcome, whose two choices both have index 0, is read alike under `fold` and
`index0`).

Each target runs on the cases that pin its point and on the real captures, which pin none: that
the other cases give the same under every outcome is tests/suite/test_pins.py's property."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import reference
from harness.check.modes import MODES
from harness.suite.cases import Case, Suite
from harness.suite.golden import read_golden
from reference.choices import OUTCOMES, REFERENCE
from tests.check.fair_targets import CAREFUL, OTHERS, RefusesProto
from tests.conftest import invoke


class RefusesHostileNames(RefusesProto):
    """Refuses `constructor` members as well as `__proto__` ones: not an I6 outcome."""

    def push(self, data: str) -> list[Any]:
        if '"constructor"' in data:
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "constructor refused")
        return super().push(data)


ROOT = Path(__file__).resolve().parents[2]
TARGETS = Path(__file__).resolve().parent / "fair_targets.py"


@functools.cache
def shipped() -> tuple[tuple[Case, frozenset[str]], ...]:
    """The shipped cases with what each pins (its `pins:` line), listed and read once."""
    return tuple((case, frozenset(case.pins)) for case in Suite(ROOT).cases())


def pinning(point: str) -> set[str]:
    """The ids of the shipped cases that pin `point`."""
    pinned = {case.case_id for case, pins in shipped() if point in pins}
    assert pinned, f"no case pins {point}"
    return pinned


def sample(point: str) -> list[str]:
    """`-k` options for the cases that pin `point` and the real captures (which pin no point)."""
    return [arg for case in sorted(pinning(point)) for arg in ("-k", case)] + ["-k", UNPINNED]


#: The real captures: cases that pin no implementation-defined point.
UNPINNED = "llama-server"


def run(
    tmp_path: Path, *args: str, modes: tuple[str, ...] = ("plain",)
) -> tuple[int, str, list[dict[str, object]]]:
    report = tmp_path / "r.json"
    chosen = [arg for mode in modes for arg in ("--mode", mode)]
    result = invoke("run", *args, "--in-process", *chosen, "--json", str(report))
    data = json.loads(report.read_text(encoding="utf-8"))
    return result.exit_code, result.output, data["results"]


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py: I3's 100,000-deep payload
@pytest.mark.parametrize(("point", "outcome"), OTHERS, ids=[f"{p}={v}" for p, v in OTHERS])
def test_another_allowed_outcome_passes_by_default_and_fails_strict(
    tmp_path: Path, point: str, outcome: str
) -> None:
    target = f"{TARGETS}:{point}_{outcome}"
    pinned = pinning(point)
    code, output, results = run(tmp_path, target, *sample(point))
    assert code == 0, output
    took = {r["case"]: r["choice"] for r in results if r["case"] in pinned}
    assert any(outcome in (c.get(point) for c in choices) for choices in took.values()), took

    code, output, results = run(tmp_path, target, "--strict", *sample(point))
    failing = {r["case"] for r in results if r["status"] != "passed"}
    assert code == 1 and failing and failing <= pinned, output
    assert f"implementation-defined {point}: only {point}={getattr(REFERENCE, point)}" in output

    code, output, _ = run(tmp_path, target, "--choose", f"{point}={outcome}", "--rule", point)
    assert code == 0, output


def test_the_reference_passes_strict(tmp_path: Path) -> None:
    code, output, results = run(tmp_path, "reference:Assembler", "--strict")
    assert code == 0, output
    assert all(r["status"] == "passed" for r in results)


def _differs(case: Case, point: str, outcome: str) -> bool:
    """True when `outcome` at `point` (the reference's own at the case's other points) gives
    another result than the reference's on `case`: its golden file's own outcome lists the
    combinations that give that result."""
    pinned = [p for p in OUTCOMES if p in case.pins]
    mine = {p: outcome if p == point else getattr(REFERENCE, p) for p in pinned}
    return mine not in read_golden(case).get("choices", [])


@pytest.mark.parametrize(
    ("point", "outcome"), sorted(CAREFUL), ids=[f"{p}={v}" for p, v in sorted(CAREFUL)]
)
def test_a_careful_client_passes_every_mode_and_fails_strict_only_where_pinned(
    tmp_path: Path, point: str, outcome: str
) -> None:
    target = f"{TARGETS}:{CAREFUL[point, outcome]}"
    cases = [case for case, pins in shipped() if point in pins]
    pinned = {c.case_id for c in cases}
    differing = {c.case_id for c in cases if _differs(c, point, outcome)}
    assert differing, f"no case pins {point}={outcome}"
    modes = tuple(MODES)
    code, output, results = run(tmp_path, target, *sample(point), modes=modes)
    assert code == 0, output
    assert {r["mode"] for r in results} == set(modes)
    assert {r["case"] for r in results} > pinned  # unpinned cases ran too
    took = [r["choice"] for r in results if r["case"] in differing and r["mode"] == "plain"]
    assert took and all(any(c.get(point) == outcome for c in t) for t in took), took
    if point == "I6":  # the refusing client matched the cut outcome in hostile-keys elsewhere
        cut = [r for r in results if r["mode"] == "hostile-keys" and r["case"] not in pinned]
        assert any({"I6": "protocol"} in r["choice"] for r in cut)

    code, output, results = run(tmp_path, target, "--strict", *sample(point), modes=modes)
    failing = {r["case"] for r in results if r["status"] != "passed"}
    assert code == 1 and failing == differing, output


def test_hostile_keys_refusal_is_wrong_before_the_cut(tmp_path: Path) -> None:
    """The cut outcome allows `protocol` at the first payload with an added `__proto__` only: a
    client that refuses every payload of the mode (any hostile name) still fails."""
    target = f"{Path(__file__).resolve()}:RefusesHostileNames"
    code, output, results = run(tmp_path, target, "-k", "llama-server/*", modes=("hostile-keys",))
    assert code == 1 and any(r["status"] == "failed" for r in results), output
