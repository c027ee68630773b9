"""A status badge: a run's results as a shields.io endpoint JSON document.

shields.io draws a badge from any URL that serves `{"schemaVersion": 1, "label", "message",
"color"}` (https://shields.io/badges/endpoint-badge). A project that gates its assembler in CI
writes this file with `conform run --badge FILE` and publishes it (a gist, GitHub Pages, a branch),
so its README shows whether it conforms, at which level, and how many cases pass.

The message counts **cases** (a case conforms when it passes in every mode it ran in), never
case-and-mode runs, per class of input (docs/spec.md section 10), and says the level, so a badge
never claims more than the run checked:

- every case conforms: `conforms (full)`, green;
- some fail, but exactly as the baseline (`--xfail`) expects: `valid 180/185, refuses invalid
  input (full, baseline)`, yellow, since that is a project keeping its promise, not a conforming
  one;
- only invalid input fails the run (valid and implementation-defined input all right): `valid
  streams right, accepts all invalid input (full)` or `valid streams right, invalid 85/116
  (full)`, orange: the contract requires `protocol` there, so the run fails (exit 1), but the
  badge says what kind of failure it is;
- anything else fails the run (a valid or implementation-defined case, an unexpected pass):
  `valid 150/185, invalid 100/116 (full)`, red.

Results without a class (a report written before classes existed) are counted as one lot:
`150/204 cases (full)`.

Like every reporter, this only turns result records into output; writing the file atomically is
the caller's job (`harness.files`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

from harness.check.results import CaseResult
from harness.reports.verdict import class_totals, failing_classes
from harness.suite.classes import InputClass

__all__ = ["SCHEMA_VERSION", "badge", "badge_json"]

#: The shields.io endpoint schema's version: the only one there is.
SCHEMA_VERSION = 1

# Status values as `CaseResult.status` holds them (strings, or an Enum whose value is the string):
# this module reads the value so that it does not depend on how the runner spells its constants.
_PASSING = frozenset({"passed"})
_EXPECTED_FAILURE = frozenset({"xfailed"})

GREEN = "brightgreen"
YELLOW = "yellow"
ORANGE = "orange"
RED = "red"
GREY = "lightgrey"


class _Result(Protocol):
    @property
    def case_id(self) -> str: ...

    @property
    def status(self) -> Any: ...


def _status(result: _Result) -> str:
    status = result.status
    return str(getattr(status, "value", status))


def badge(
    results: Iterable[_Result], *, label: str, level: str = "full", partial: str | None = None
) -> dict[str, Any]:
    """The shields.io endpoint document for one target's results at one level; a partial run
    (`partial` says why) is grey and says so, whatever its results."""
    results = list(results)
    classed = bool(results) and all(getattr(r, "input_class", None) is not None for r in results)
    cases: dict[str, bool] = {}  # case id -> passed in every mode
    meets_baseline = True
    for result in results:
        status = _status(result)
        cases[result.case_id] = cases.get(result.case_id, True) and status in _PASSING
        if status not in _PASSING | _EXPECTED_FAILURE:
            meets_baseline = False
    total = len(cases)
    conforming = sum(cases.values())
    if partial is not None:
        message, color = f"partial: {partial} ({level})", GREY
    elif total == 0:
        message, color = f"no cases ({level})", GREY
    elif conforming == total and meets_baseline:
        message, color = f"conforms ({level})", GREEN
    elif classed and (found := _by_class(results)) is not None:
        words, only_invalid = found
        if meets_baseline:
            message, color = f"{words} ({level}, baseline)", YELLOW
        else:
            message, color = f"{words} ({level})", ORANGE if only_invalid else RED
    elif meets_baseline:
        message, color = f"{conforming}/{total} cases ({level}, baseline)", YELLOW
    else:
        message, color = f"{conforming}/{total} cases ({level})", RED
    return {
        "schemaVersion": SCHEMA_VERSION,
        "label": label or "conform",
        "message": message,
        "color": color,
    }


def _by_class(results: list[_Result]) -> tuple[str, bool] | None:
    """The message's words by class, and whether only invalid input fails the run."""
    if not all(isinstance(r, CaseResult) for r in results):
        return None
    records = [r for r in results if isinstance(r, CaseResult)]
    totals = class_totals(records)
    valid = totals[InputClass.VALID]
    invalid = totals[InputClass.INVALID]
    defined = totals[InputClass.IMPLEMENTATION_DEFINED]
    parts = []
    if valid.cases:
        right = not valid.failed
        parts.append("valid streams right" if right else f"valid {valid.passed}/{valid.cases}")
    if invalid.cases:
        if not invalid.failed:
            parts.append("refuses invalid input")
        elif invalid.accepted == invalid.cases:
            parts.append("accepts all invalid input")
        else:
            parts.append(f"invalid {invalid.passed}/{invalid.cases}")
    if defined.failed:
        parts.append(f"implementation-defined {defined.passed}/{defined.cases}")
    return ", ".join(parts), failing_classes(records) <= {str(InputClass.INVALID)}


def badge_json(
    results: Iterable[_Result], *, label: str, level: str = "full", partial: str | None = None
) -> str:
    """`badge` as the text of the endpoint file (UTF-8 JSON, trailing newline)."""
    document = badge(results, label=label, level=level, partial=partial)
    return json.dumps(document, ensure_ascii=False) + "\n"
