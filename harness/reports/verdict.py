"""The verdict by class of input: each class's own totals, and what they say in words.

A maintainer reads a verdict by what it is about (docs/spec.md section 10). Every report gives
the three classes their own totals, with the real captures apart, and says them in one sentence:
"assembles every valid stream right (185/185 cases, 9 real captures); accepts 31 kinds of
invalid input (40 of 116 cases); takes an allowed outcome on every implementation-defined case
(56/56; another than the reference's on 12)".

A case **conforms** when it passes in every mode run. For valid input, a failing case fails in
`plain` or only under a mutation mode; invalid input a target did not refuse is either
**accepted** (it answered, or raised another kind of error) or crashed on (a crash or a hang);
an implementation-defined case that conforms took the reference's outcome or **another** allowed
one. Invalid input that fails is a failure (the contract requires `protocol` there), so the run
still exits 1; the words and the badge's colour say what kind of failure it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.check.modes import PLAIN
from harness.check.results import CaseResult
from harness.check.status import Status
from harness.reports.causes import refused
from harness.suite.classes import CLASSES, InputClass
from reference.choices import REFERENCE


@dataclass
class ClassTotals:
    """One class's cases in a run, counted per case (a case counts once, whatever its modes)."""

    cases: int = 0
    passed: int = 0  # conforms in every mode run
    unexpected: int = 0  # has a result that fails the run (not an expected failure)
    real: int = 0
    real_passed: int = 0
    failed_in_plain: int = 0  # fails in plain mode (when plain ran)
    real_failed_in_plain: int = 0
    failed_only_in_modes: int = 0  # conforms in plain, fails in another mode
    crashed: int = 0  # crashed or timed out in some mode
    accepted: int = 0  # invalid input answered instead of refused (in some mode)
    other_outcome: int = 0  # conforms, taking an allowed outcome other than the reference's

    @property
    def failed(self) -> int:
        return self.cases - self.passed

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "unexpected": self.unexpected,
            "real": {
                "cases": self.real,
                "passed": self.real_passed,
                "failed": self.real - self.real_passed,
            },
            "failed_in_plain": self.failed_in_plain,
            "real_failed_in_plain": self.real_failed_in_plain,
            "failed_only_in_modes": self.failed_only_in_modes,
            "crashed": self.crashed,
            "accepted": self.accepted,
            "other_outcome": self.other_outcome,
        }


def _is_reference(combo: Mapping[str, str]) -> bool:
    return all(getattr(REFERENCE, point, value) == value for point, value in combo.items())


def _accepted(result: CaseResult) -> bool:
    """The run answered where the golden file has a `protocol` error."""
    return any(refused(m) is not None for m in result.mismatches)


def class_totals(results: Iterable[CaseResult]) -> dict[str, ClassTotals]:
    """Each class's totals (every class named, zeros included); a result without a class (a
    report written before classes existed) counts as valid."""
    per_case: dict[str, list[CaseResult]] = {}
    for result in results:
        per_case.setdefault(result.case_id, []).append(result)
    totals = {str(c): ClassTotals() for c in CLASSES}
    for runs in per_case.values():
        first = runs[0]
        found = totals[str(first.input_class or InputClass.VALID)]
        found.cases += 1
        conforms = all(r.status.conforms for r in runs)
        found.passed += conforms
        found.real += first.real
        found.real_passed += first.real and conforms
        found.unexpected += any(r.status.fails_run for r in runs)
        plain = [r for r in runs if r.mode == PLAIN]
        if not conforms:
            if plain and not all(r.status.conforms for r in plain):
                found.failed_in_plain += 1
                found.real_failed_in_plain += first.real
            elif plain:
                found.failed_only_in_modes += 1
            bad = [r for r in runs if not r.status.conforms]
            was = [r.expectation.was if r.expectation is not None else r.status for r in bad]
            found.crashed += any(s in (Status.CRASHED, Status.TIMED_OUT) for s in was)
            found.accepted += any(_accepted(r) for r in bad)
        elif any(r.choice and not any(_is_reference(c) for c in r.choice) for r in runs):
            found.other_outcome += 1
    return totals


def class_line(totals: Mapping[str, ClassTotals]) -> str:
    """`by class (cases conforming): valid 185/185 (real captures 9/9), invalid 85/116 FAIL,
    implementation-defined 56/56`."""
    parts = []
    for name in CLASSES:
        t = totals[str(name)]
        if not t.cases:
            continue
        mark = " FAIL" if t.unexpected else " xfail" if t.failed else ""
        real = f" (real captures {t.real_passed}/{t.real})" if t.real else ""
        parts.append(f"{name} {t.passed}/{t.cases}{mark}{real}")
    return f"by class (cases conforming): {', '.join(parts) or 'no cases'}"


def _valid_words(t: ClassTotals) -> str:
    real = f", {t.real} real capture{'s' if t.real != 1 else ''}" if t.real else ""
    if not t.failed:
        return f"assembles every valid stream right ({t.passed}/{t.cases} cases{real})"
    plain = t.failed_in_plain or t.failed_only_in_modes  # 0 when plain did not run
    wrong = t.failed_in_plain if plain else t.failed
    if not wrong:  # right in plain, wrong only under a mutation mode
        among = f" ({t.real - t.real_passed} of {t.real} real captures)" if t.real else ""
        return (
            f"gets {t.failed_only_in_modes} of {t.cases} valid streams wrong only under a "
            f"mutation mode{among}"
        )
    real_wrong = t.real_failed_in_plain if plain else t.real - t.real_passed
    among = f" ({real_wrong} of {t.real} real captures)" if t.real else ""
    words = f"gets {wrong} of {t.cases} valid streams wrong{among}"
    if t.failed_only_in_modes:
        words += f", and {t.failed_only_in_modes} more only under a mutation mode"
    return words


def _count(n: int, what: str) -> str:
    """`1 invalid input`, `3 invalid inputs`."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _invalid_words(t: ClassTotals, kinds: int | None) -> str:
    if not t.failed:
        return f"refuses every invalid input ({t.passed}/{t.cases} cases)"
    parts = []
    if t.accepted == t.cases:
        parts.append(f"accepts all invalid input ({t.cases} cases)")
    elif t.accepted:
        what = f"{kinds} kinds of invalid input" if kinds else "invalid input"
        parts.append(f"accepts {what} ({t.accepted} of {t.cases} cases)")
    if t.crashed:
        them = "it" if t.crashed == 1 else "them"
        parts.append(f"crashes on {_count(t.crashed, 'invalid input')} instead of refusing {them}")
    rest = t.failed - t.accepted - t.crashed
    if rest > 0:
        parts.append(f"gets {_count(rest, 'more invalid input')} wrong")
    return "; ".join(parts)


def _defined_words(t: ClassTotals) -> str:
    other = f"; another than the reference's on {t.other_outcome}" if t.other_outcome else ""
    if not t.failed:
        return (
            "takes an allowed outcome on every implementation-defined case "
            f"({t.passed}/{t.cases}{other})"
        )
    return f"takes no allowed outcome on {t.failed} of {t.cases} implementation-defined cases"


def verdict_words(totals: Mapping[str, ClassTotals], *, kinds: int | None = None) -> str:
    """The verdict in one sentence, class by class (classes the run had no case of left out);
    `kinds`: how many kinds of invalid input the target accepted (distinct problems)."""
    parts = []
    valid = totals[InputClass.VALID]
    invalid = totals[InputClass.INVALID]
    defined = totals[InputClass.IMPLEMENTATION_DEFINED]
    if valid.cases:
        parts.append(_valid_words(valid))
    if invalid.cases:
        parts.append(_invalid_words(invalid, kinds))
    if defined.cases:
        parts.append(_defined_words(defined))
    return "; ".join(parts) if parts else "no cases"


def failing_classes(results: Sequence[CaseResult]) -> set[str]:
    """The classes of the results that fail the run."""
    return {str(r.input_class or InputClass.VALID) for r in results if r.status.fails_run}
