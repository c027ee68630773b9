"""conform's harness: run any assembler over recordings and compare with the golden files.

The `conform` command (`harness.cli`) is a thin layer over these names.
"""

from __future__ import annotations

from harness.errors import ConformError, GoldenError, RecordingError, SuiteError, TargetError
from harness.golden import build_golden, read_golden, serialize
from harness.inject import MODES
from harness.recording import Payload, iter_payloads, read_info
from harness.reports import RunInfo, json_report, junit_xml
from harness.runner import CaseResult, Expectation, Mismatch, in_order, run, run_case, run_parallel
from harness.suite import Case, Suite
from harness.target import load_target
from harness.xfail import XfailList

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
