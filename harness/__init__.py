"""conform's harness: run any assembler over recordings and compare with the golden files.

What you need to run a target from Python (docs/api.md):

    import harness

    plan = harness.prepare(harness.Selection(patterns=("llama-server",)))
    record = harness.run_target(harness.RunOptions(target="mypkg:Assembler"), plan)
    for result in record.results:
        print(result.case_id, result.mode, result.status)
    raise SystemExit(record.exit_code)

The `conform` command, the pytest plugin and `conform matrix` are thin front doors over the same
calls. Names are loaded on first use (PEP 562), so importing a part of the harness (the pytest
plugin's entry point, say) does not import all of it; importing any module of the harness starts
nothing (tests/test_layout.py). The package map, stage by stage, is
docs/layout.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.check.modes import MODES
    from harness.check.options import RunOptions
    from harness.check.results import CaseResult, Crash, Expectation, Mismatch
    from harness.check.runner import run_case
    from harness.check.status import Status
    from harness.errors import (
        ConformError,
        GoldenError,
        RecordingError,
        SuiteError,
        TargetError,
    )
    from harness.fuzz.loop import FuzzRecord, FuzzRequest, run_fuzz
    from harness.pipeline import (
        Interruption,
        Outputs,
        Plan,
        RunRecord,
        Selection,
        Target,
        TargetRun,
        prepare,
        run_target,
        run_targets,
        write_outputs,
    )
    from harness.reports.report import Report, RunInfo
    from harness.suite.cases import Case, Suite

_WHERE = {
    "MODES": "harness.check.modes",
    "Case": "harness.suite.cases",
    "CaseResult": "harness.check.results",
    "ConformError": "harness.errors",
    "Crash": "harness.check.results",
    "Expectation": "harness.check.results",
    "FuzzRecord": "harness.fuzz.loop",
    "FuzzRequest": "harness.fuzz.loop",
    "GoldenError": "harness.errors",
    "Interruption": "harness.pipeline",
    "Mismatch": "harness.check.results",
    "Outputs": "harness.pipeline",
    "Plan": "harness.pipeline",
    "RecordingError": "harness.errors",
    "Report": "harness.reports.report",
    "RunInfo": "harness.reports.report",
    "RunOptions": "harness.check.options",
    "RunRecord": "harness.pipeline",
    "Selection": "harness.pipeline",
    "Status": "harness.check.status",
    "Suite": "harness.suite.cases",
    "SuiteError": "harness.errors",
    "Target": "harness.pipeline",
    "TargetError": "harness.errors",
    "TargetRun": "harness.pipeline",
    "prepare": "harness.pipeline",
    "run_case": "harness.check.runner",
    "run_fuzz": "harness.fuzz.loop",
    "run_target": "harness.pipeline",
    "run_targets": "harness.pipeline",
    "write_outputs": "harness.pipeline",
}

__all__ = [
    "MODES",
    "Case",
    "CaseResult",
    "ConformError",
    "Crash",
    "Expectation",
    "FuzzRecord",
    "FuzzRequest",
    "GoldenError",
    "Interruption",
    "Mismatch",
    "Outputs",
    "Plan",
    "RecordingError",
    "Report",
    "RunInfo",
    "RunOptions",
    "RunRecord",
    "Selection",
    "Status",
    "Suite",
    "SuiteError",
    "Target",
    "TargetError",
    "TargetRun",
    "prepare",
    "run_case",
    "run_fuzz",
    "run_target",
    "run_targets",
    "write_outputs",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
