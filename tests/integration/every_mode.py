"""One `conform run` of a program in every mode but plain, shared by a module's per-mode tests.

An example passes every case in plain mode, its replies checked against the schemas (each module's
`test_the_example_follows_the_protocol_schemas`). In the other modes it runs the real captures and
the tool-call cases (R2: what key order, escapes and unknown members most often break): the modes
change how a chunk is written, never which rules a case needs, and each example also meets 150
generated streams in drawn modes (test_differential.py).

Each example's "passes in mode M" is one test per mode, so that a failure names its mode; the
runs themselves are one: a mode's payloads depend on the seed, the case and the step alone, never
on the other modes run beside it, so one run with every mode gives each mode's results as its own
run would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.check.modes import MODES, PLAIN
from harness.check.results import PASSED
from harness.suite.cases import Suite
from tests.conftest import conform

ROOT = Path(__file__).resolve().parents[2]
#: The modes the shared run covers (plain runs apart, with --validate-protocol).
NOT_PLAIN = tuple(mode for mode in MODES if mode != PLAIN)
#: The cases it runs them on: the real captures and the tool-call cases.
SAMPLE = ("llama-server", "synthetic/r2_*")


@dataclass(frozen=True)
class EveryMode:
    """The shared run: its exit status, its text and its JSON report's results."""

    code: int
    output: str
    results: list[dict[str, Any]]

    def check_passes(self, mode: str) -> None:
        """Every case of the sample ran in `mode` and passed (its report lines shown if not)."""
        mine = [r for r in self.results if r["mode"] == mode]
        failing = [r["case"] for r in mine if r["status"] != PASSED]
        shown = [
            line for line in self.output.splitlines()
            if line.startswith(("FAIL ", "CRASH ", "TIMEOUT ")) and mode in line
        ]  # fmt: skip
        assert not failing, f"{mode}: {len(failing)} not passed: {failing[:10]}\n" + "\n".join(
            shown[:20]
        )
        assert len(mine) == len(Suite(ROOT).cases(SAMPLE)), (mode, len(mine))
        if all(r["status"] == PASSED for r in self.results):  # the gate's word too
            assert self.code == 0, self.output[-3000:]


def run_every_mode(command: str, report: Path) -> EveryMode:
    """`conform run --exec COMMAND` on the sample in every mode but plain, with its JSON report
    at `report`."""
    modes = [arg for mode in NOT_PLAIN for arg in ("--mode", mode)]
    sample = [arg for pattern in SAMPLE for arg in ("-k", pattern)]
    code, output = conform("run", "--exec", command, *modes, *sample, "--json", str(report))
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    assert {r["mode"] for r in results} == set(NOT_PLAIN), output[-3000:]
    return EveryMode(code, output, results)
