"""The `truncated` mode: the recording cut after payload k, for each k it picks, then `finish`.

Expected at each cut are the golden steps up to it, then what the reference's `finish` returns
there (`prefix_finishes`): a stream that ends early is judged by what the reference makes of the
part that came. The cuts are `harness.check.modes.truncation_points`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import reference
from harness.check.modes import truncation_points
from harness.check.passes import Pass, stale
from harness.drive.inprocess import finish_step, push_step
from harness.suite.cases import Case
from reference.choices import REFERENCE, Choices


def prefix_finishes(
    case: Case, points: Sequence[int], capped: bool, *, choices: Choices = REFERENCE
) -> Iterator[tuple[int, dict[str, Any]]]:
    """For each cut in `points` (ascending), what the reference's `finish` returns there.

    One reference pass serves every cut: the reference's `finish` only reads its state, so it is
    called mid-stream and the pass goes on (tests/check/test_modes.py checks this against fresh
    runs). The fast reference (`reference.Assembler`, held to the plain one by
    tests/assembler/test_differential.py): a run asks for every cut of every case, and the plain
    one was a fifth of `conform run`'s CPU.
    """
    assembler = reference.Assembler(choices)
    wanted = iter(points)
    cut = next(wanted, None)
    if cut == 0:  # before the first payload: the empty stream
        yield cut, finish_step(assembler, capped)
        cut = next(wanted, None)
    for index, payload in enumerate(case.payloads()):
        if cut is None:
            return
        if "error" in push_step(assembler, payload.data, payload.line):
            raise stale(case, f"the reference fails at step {index}, before the golden file does")
        if index + 1 == cut:
            yield cut, finish_step(assembler, capped)
            cut = next(wanted, None)
    if cut is not None:
        raise stale(case, f"the recording has fewer than {cut} payloads")


def check_truncated(check: Pass, golden: dict[str, Any], *, seed: int, choices: Choices) -> None:
    """Each cut in turn: a fresh assembler, the payloads up to the cut, `finish`, compared.

    Stops at the first cut that fails, so the report names one prefix to reproduce.
    """
    steps = golden["steps"]
    capped: bool = golden["thinking_capped"]
    points = truncation_points(len(steps), seed=seed, case_id=check.case.case_id)
    later = iter(points[1:])
    for cut, expected in prefix_finishes(check.case, points, capped, choices=choices):
        if (after := next(later, None)) is not None:  # sent now, to run while this one is read
            check.send_ahead(steps, limit=after, finish=expected, capped=capped)
        check.cut = cut
        check.play(steps, limit=cut, finish=expected, capped=capped)
        if check.found:
            return
