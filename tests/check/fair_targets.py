"""The reference under another allowed outcome at one implementation-defined point: conforming
implementations that differ from the reference only where docs/spec.md section 5 allows it.

`conform run tests/check/fair_targets.py:I3_ignore` runs the reference with I3 `ignore`, and so
on for every point and outcome (names `<point>_<outcome>`).
"""

from __future__ import annotations

import functools

import reference
from reference.choices import OUTCOMES, REFERENCE


def _make(point: str, outcome: str) -> reference.Assembler:
    return reference.Assembler(REFERENCE.replace({point: outcome}))


#: (point, outcome) for every outcome the reference does not take.
OTHERS = [(p, v) for p, values in OUTCOMES.items() for v in values if v != getattr(REFERENCE, p)]

for _point, _outcome in OTHERS:
    globals()[f"{_point}_{_outcome}"] = functools.partial(_make, _point, _outcome)
