"""Checking one generated stream against a target: in memory, with the runner `conform run` uses.

The stream's expected result is worked out by the reference (`harness.fuzz.model.expect`), and the
target runs it through `harness.check.runner.run_case` in each mode asked for. The alternatives
of implementation-defined points are worked out only for a stream the target does not pass as
the reference assembles it (or when the run gates on an outcome other than the reference's).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.check.options import RunOptions
from harness.check.results import FAILED, PASSED, CaseResult
from harness.check.runner import run_case
from harness.drive.inprocess import Driver
from harness.fuzz.model.expect import candidates_of, expected, touched_points, with_alternatives
from harness.fuzz.model.stream import Stream
from harness.fuzz.request import CASE_ID
from harness.suite.cases import Case
from harness.suite.sse import Payload
from reference.choices import REFERENCE


def case_of(case_id: str, payloads: Sequence[Payload] = ()) -> Case:
    """The case a stream is checked as: its payloads held in memory (its files are never read)."""
    return Case(case_id, Path(f"{case_id}.sse"), Path(f"{case_id}.json"), held=tuple(payloads))


@dataclass
class Checked:
    """What checking a stream gave: the results that did not pass, and the points whose
    alternatives were worked out (empty when none were needed)."""

    failed: list[CaseResult]
    points: tuple[str, ...] = ()


class Checker:
    """Runs streams through one driver in memory and says where they depart from the reference."""

    def __init__(self, options: RunOptions, driver: Driver, *, seed: int) -> None:
        self.options = replace(options, seed=seed)  # the mutating modes': the search's own
        self.driver = driver
        self.require = options.required
        # Gating on another outcome than the reference's: the alternatives are always needed.
        self.eager = any(getattr(REFERENCE, p) != v for p, v in (self.require or {}).items())

    def check(
        self,
        stream: Stream,
        modes: Sequence[str],
        *,
        case_id: str = CASE_ID,
        every: bool = False,
        payloads: Sequence[Payload] | None = None,
        golden: dict[str, Any] | None = None,
    ) -> Checked:
        """Run `stream` in `modes` (stopping at the first that fails unless `every`)."""
        if payloads is None:
            payloads = stream.payload_records()
        case = case_of(case_id, payloads)
        capped = stream.thinking_capped
        points: tuple[str, ...] = ()
        full: dict[str, Any] | None = None  # the document with its alternatives, once made
        if self.eager:
            points = touched_points(payloads, capped, candidates=candidates_of(stream))
            golden = full = with_alternatives(payloads, capped, case.recording_name, points)
        document = golden if golden is not None else expected(payloads, capped, case.recording_name)
        failed = []
        for mode in modes:
            result = self._run(case, document, mode)
            if result.status == FAILED and full is None:
                points = touched_points(payloads, capped, candidates=candidates_of(stream))
                full = document
                if points:  # another allowed outcome may be the target's
                    full = document = with_alternatives(
                        payloads, capped, case.recording_name, points
                    )
                    result = self._run(case, document, mode)
            if result.status != PASSED:
                failed.append(result)
                if not every:
                    break
        return Checked(failed, points)

    def _run(self, case: Case, golden: dict[str, Any], mode: str) -> CaseResult:
        return run_case(case, golden, self.driver, mode=mode, options=self.options)


def signature(result: CaseResult) -> tuple[str, str]:
    """How a result went wrong, whatever the stream's size: its status and first field (indices
    left out) or the crash's first words. Shrinking keeps a stream only when this stays."""
    if result.mismatches:
        return (str(result.status), re.sub(r"\[\d+\]", "[]", result.mismatches[0].path))
    if result.crash is not None:
        return (str(result.status), result.crash.message.split(":")[0])
    return (str(result.status), "")


def case_id_of(result: CaseResult, stream: Stream) -> str:
    """`fuzz/<what differs>_<hash>`: the case a finding is kept as (and checked under)."""
    words = signature(result)[1] if result.mismatches else str(result.status)
    words = re.sub(r"\[\]", "", words).replace(".", "_").lower()
    digest = hashlib.sha256("\n".join(stream.payloads).encode("utf-8", "surrogatepass"))
    return f"fuzz/{re.sub(r'[^a-z0-9_]+', '', words)[:40]}_{digest.hexdigest()[:8]}"
