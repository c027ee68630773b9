"""conform's harness: run any assembler over recordings and compare with the golden files.

The `conform` command (`harness.cli`) is a thin layer over these names.
"""

from __future__ import annotations

from harness.errors import ConformError, GoldenError, RecordingError, SuiteError, TargetError
from harness.golden import build_golden, read_golden, serialize
from harness.inject import MODES
from harness.recording import Payload, iter_payloads, read_info
from harness.runner import CaseResult, Mismatch, run, run_case
from harness.suite import Case, Suite
from harness.target import load_target

__all__ = [
    "MODES",
    "Case",
    "CaseResult",
    "ConformError",
    "GoldenError",
    "Mismatch",
    "Payload",
    "RecordingError",
    "Suite",
    "SuiteError",
    "TargetError",
    "build_golden",
    "iter_payloads",
    "load_target",
    "read_golden",
    "read_info",
    "run",
    "run_case",
    "serialize",
]
