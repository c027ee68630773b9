"""The run pipeline: the one way a target is run, whoever asks (`conform run`, `conform matrix`,
the pytest plugin, `conform fuzz`, or your own Python).

    plan = prepare(Selection(patterns=("llama-server",)), modes=("plain",))
    record = run_target(RunOptions(target="mypkg:Assembler"), plan)
    record.exit_code, record.report.results

`prepare` opens the suites and selects the cases and modes (`selection`); `run_target` and
`run_targets` drive the targets and apply expected failures (`run`); `write_outputs` writes the
reports asked for (`outputs`); `Interruption` stops a run on a signal (`signals`).
"""

from __future__ import annotations

from harness.pipeline.outputs import Outputs, check_outputs, write_outputs
from harness.pipeline.run import RunRecord, Target, TargetRun, run_target, run_targets
from harness.pipeline.selection import Plan, Selection, parse_shard, prepare
from harness.pipeline.signals import Interruption

__all__ = [
    "Interruption",
    "Outputs",
    "Plan",
    "RunRecord",
    "Selection",
    "Target",
    "TargetRun",
    "check_outputs",
    "parse_shard",
    "prepare",
    "run_target",
    "run_targets",
    "write_outputs",
]
