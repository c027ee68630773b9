"""Issue 21 class 8, odd values from a target: whatever a Python target returns or raises (an
integer of 100,000 digits, a `kind` or `__str__` that raises, a list 10,000 levels deep, a
recursive `__repr__`, NaN), in-process and through the worker alike, the case is a crash or a
mismatch naming what was wrong, every report is written, and no frame of conform's own shows.

The line protocol's own rules (bare NaN, unknown fields) are in
tests/drive/test_protocol_errors.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import invoke

TARGETS = Path(__file__).parent / "targets.py"

ODD = {
    "HugeInteger": ("crashed", "state.reasoning_tokens is an integer of about 100,001 digits"),
    "KindRaises": ("crashed", "then reading it raised RuntimeError: the kind property exploded"),
    "StrRaises": ("crashed", "push raised _StrRaisesError: <_StrRaisesError.__str__ raised"),
    "StrRaisesProtocol": ("failed", "the target raised protocol: <_StrRaisesProtocolError.__str__"),
    "DeepEvents": ("crashed", "push returned something conform cannot read: cannot tell the type"),
    "DeepId": ("crashed", "the state after push is something conform cannot read: state.id is a"),
    "RecursiveReprId": ("crashed", "state.id is a _RecursiveRepr, not a JSON scalar: <a _Recursi"),
    "NaNTokens": ("failed", "expected 0, got NaN"),
}


@pytest.mark.parametrize("where", ["worker", "in-process"])
@pytest.mark.parametrize("name", sorted(ODD))
def test_an_odd_value_is_a_result_with_every_report(tmp_path: Path, name: str, where: str) -> None:
    status, message = ODD[name]
    report = tmp_path / "report.json"
    args = ["run", f"{TARGETS}:{name}", "-k", "llama-server/tool_call", "--mode", "plain"]
    args += ["--json", str(report), "-v"] + (["--in-process"] if where == "in-process" else [])
    result = invoke(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "maximum recursion depth" not in result.output
    assert "harness/worker/program.py" not in result.output and "harness/drive" not in result.output
    assert [r["status"] for r in json.loads(report.read_text())["results"]] == [status]
