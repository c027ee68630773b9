"""conform's harness: run any assembler over recordings and compare with the golden files.

The `conform` command (`harness.cli`) is a thin layer over these names. They are loaded on first
use (PEP 562), so importing a part of the harness (the pytest plugin's entry point, say) does not
import all of it.

The package is laid out by stage, imports flowing one way (docs/layout.md):

    cli, plugin, adapter   front doors: parse, call one function, render
    reports/               result records -> text, JSON, JUnit XML, GitHub output, progress
    check/                 modes, comparison, the runner, expected failures
    capture/               live recording
    suite/                 recordings (SSE reader), cases, golden files
    drive/                 in-process and worker drivers, normalization
    errors, files, safetext the base every stage uses
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.check.modes import MODES
    from harness.check.runner import (
        CaseResult,
        Expectation,
        Mismatch,
        in_order,
        run,
        run_case,
        run_parallel,
    )
    from harness.check.xfail import XfailList
    from harness.drive.inprocess import load_target
    from harness.errors import ConformError, GoldenError, RecordingError, SuiteError, TargetError
    from harness.reports.machine import RunInfo, json_report, junit_xml
    from harness.suite.cases import Case, Suite
    from harness.suite.golden import build_golden, read_golden, serialize
    from harness.suite.recording import iter_payloads, read_info
    from harness.suite.sse import Payload

_WHERE = {
    "MODES": "harness.check.modes",
    "Case": "harness.suite.cases",
    "CaseResult": "harness.check.runner",
    "ConformError": "harness.errors",
    "Expectation": "harness.check.runner",
    "GoldenError": "harness.errors",
    "Mismatch": "harness.check.runner",
    "Payload": "harness.suite.sse",
    "RecordingError": "harness.errors",
    "RunInfo": "harness.reports.machine",
    "Suite": "harness.suite.cases",
    "SuiteError": "harness.errors",
    "TargetError": "harness.errors",
    "XfailList": "harness.check.xfail",
    "build_golden": "harness.suite.golden",
    "in_order": "harness.check.runner",
    "iter_payloads": "harness.suite.recording",
    "json_report": "harness.reports.machine",
    "junit_xml": "harness.reports.machine",
    "load_target": "harness.drive.inprocess",
    "read_golden": "harness.suite.golden",
    "read_info": "harness.suite.recording",
    "run": "harness.check.runner",
    "run_case": "harness.check.runner",
    "run_parallel": "harness.check.runner",
    "serialize": "harness.suite.golden",
}

__all__ = [
    "MODES",
    "Case",
    "CaseResult",
    "ConformError",
    "Expectation",
    "GoldenError",
    "Mismatch",
    "Payload",
    "RecordingError",
    "RunInfo",
    "Suite",
    "SuiteError",
    "TargetError",
    "XfailList",
    "build_golden",
    "in_order",
    "iter_payloads",
    "json_report",
    "junit_xml",
    "load_target",
    "read_golden",
    "read_info",
    "run",
    "run_case",
    "run_parallel",
    "serialize",
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
