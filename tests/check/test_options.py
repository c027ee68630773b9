"""RunOptions: the one settings object every front door builds, and its rules, checked once."""

from __future__ import annotations

import pytest

from harness.check.modes import MODES
from harness.check.options import RunOptions
from harness.errors import ConformError
from reference.choices import OUTCOMES, REFERENCE


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"target": "m:A", "exec_command": "prog"}, "give either TARGET or --exec"),
        ({"target": "m:A", "timeout": 0}, "--timeout: 0 is not above 0 seconds"),
        ({"target": "m:A", "timeout": float("inf")}, "--timeout: inf is not a finite number"),
        ({"timeout": 86_401}, "--timeout: 86401 is more than 86400 seconds"),
        ({"exec_command": "prog", "in_process": True}, "--in-process runs a Python TARGET"),
        ({"target": "m:A", "in_process": True, "validate_protocol": True}, "--validate-protocol"),
        ({"target": "m:A", "in_process": True, "jobs": 2}, "-j runs worker processes"),
        ({"target": "m:A", "modes": ("plain", "nope")}, "'nope' is not a mode; the modes are"),
    ],
)
def test_options_that_do_not_go_together(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConformError, match=message.replace("-", r"\-")):
        RunOptions(**options)  # type: ignore[arg-type]


def test_modes_in_the_order_given_each_once_or_every_mode() -> None:
    assert RunOptions(target="m:A").chosen_modes == MODES
    picked = RunOptions(target="m:A", modes=("escapes", "plain", "escapes")).chosen_modes
    assert picked == ("escapes", "plain")


def test_without_a_target_they_judge_and_start_nothing() -> None:
    options = RunOptions(seed=3)
    assert options.driver is None and options.seed == 3 and options.required is None
    with pytest.raises(ConformError, match="give either TARGET or --exec"):
        options.start_driver()


def test_the_timeout_is_checked_by_the_rule_of_every_time_limit() -> None:
    assert RunOptions(target="m:A", timeout="2.5").timeout == 2.5  # type: ignore[arg-type]
    assert RunOptions(target="m:A").driver is not None
    assert RunOptions(target="m:A", timeout=86_400).driver.timeout == 86_400  # type: ignore[union-attr]


def test_required_choices() -> None:
    assert RunOptions(target="m:A").required is None
    chosen = RunOptions(target="m:A", chosen_points=(("I3", "ignore"),)).required
    assert chosen == {"I3": "ignore"}
    strict = RunOptions(target="m:A", strict=True, chosen_points=(("I3", "ignore"),))
    assert strict.required == {
        **{point: getattr(REFERENCE, point) for point in OUTCOMES},
        "I3": "ignore",
    }


def test_the_label_names_the_target_or_the_program() -> None:
    assert RunOptions(target="m:A").label == "m:A"
    assert RunOptions(exec_command="node a.mjs").label == "node a.mjs"
