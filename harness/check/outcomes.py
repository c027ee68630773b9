"""The outcomes a target may match on a case: the golden file's own, its alternatives (one per
allowed choice at an implementation-defined point), and, in `hostile-keys`, the one a target
refusing `__proto__` members gives (I6 `protocol`); and how close a failed attempt came.

The runner (`harness.check.runner`) tries them in this order and stops at the first that
matches; a failure is reported against the closest.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from harness.check.modes import HOSTILE_KEYS_MODE, proto_cut
from harness.check.results import CaseResult
from harness.suite.cases import Case

Outcome = tuple[tuple[dict[str, str], ...], dict[str, Any]]


def outcomes(golden: dict[str, Any], *, require: dict[str, str] | None = None) -> list[Outcome]:
    """The outcomes a target may match, each with the choices that give it; the reference's first.

    `require` keeps only outcomes whose choices agree with it on the points it names (`--strict`
    requires the reference's own choice at every point).
    """
    found: list[Outcome] = [(tuple(golden.get("choices", ())), golden)]
    for alternative in golden.get("alternatives", ()):
        expected = {**alternative, "thinking_capped": golden["thinking_capped"]}
        found.append((tuple(alternative["choices"]), expected))
    if not require:
        return found
    return [
        (kept, expected)
        for combos, expected in found
        if (kept := tuple(c for c in combos if all(c.get(p, v) == v for p, v in require.items())))
        or not combos
    ]


def proto_outcomes(
    case: Case,
    candidates: Sequence[Outcome],
    *,
    mode: str,
    seed: int,
    require: dict[str, str] | None = None,
) -> list[Outcome]:
    """The outcomes a target refusing `__proto__` members (I6 `protocol`) may give in `mode`.

    `hostile-keys` adds such members; such a target matches each outcome in `candidates` up to
    the first payload that has one, and fails that payload with `protocol`. None when `require`
    asks for I6 `ignore`, the mode adds none, or each outcome ends before that payload (an error
    there, even `server`, becomes `protocol`: the payload's shape is checked first, R8). The caller
    passes `require` only for a case that pins I6: gating on a point (`--strict`) concerns the
    cases that pin it, not the members a mode adds to every case.
    """
    if mode != HOSTILE_KEYS_MODE or (require or {}).get("I6", "protocol") != "protocol":
        return []
    cut = proto_cut(
        mode, seed=seed, case_id=case.case_id, payloads=(p.data for p in case.payloads())
    )
    if cut is None:
        return []
    found: dict[str, Outcome] = {}
    for combos, expected in candidates:
        steps = list(itertools.islice(expected["steps"], cut + 1))
        if len(steps) <= cut or any("error" in step for step in steps[:cut]):
            continue  # the outcome ends before the cut: a refusing target matches it as it is
        if steps[cut].get("error", {}).get("kind") == "protocol":
            continue  # it fails there already, as a refusing target does
        cut_steps = [*steps[:cut], {"line": steps[cut]["line"], "error": {"kind": "protocol"}}]
        choices = tuple({**c, "I6": "protocol"} for c in combos) or ({"I6": "protocol"},)
        outcome = {"thinking_capped": expected["thinking_capped"], "steps": cut_steps}
        found.setdefault(repr(cut_steps), (choices, outcome))
    return list(found.values())


def reach(result: CaseResult) -> tuple[int, int]:
    """How far a failed attempt matched: later first mismatches are closer outcomes."""
    if not result.mismatches:
        return (0, 0)
    first = result.mismatches[0]
    return (result.cut or 0, 2**62 if first.step is None else first.step)
