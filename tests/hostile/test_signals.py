"""Ctrl-C and SIGTERM while a target hangs (issue rows 2 and 3): conform stops within about a
second, kills every program it started, writes the reports of the runs that finished, marks the
run as interrupted, and exits 128 + the signal's number.

conform runs as a real process here, so that signals reach it as they would from a terminal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.suite.cases import Suite
from tests.conftest import SUBREAPER, live_children, wait_for_children
from tests.programs.mini_suite import BAD, CASES

TARGETS = Path(__file__).parent / "targets.py"

pytestmark = pytest.mark.skipif(not SUBREAPER, reason="counts processes through Linux's /proc")


def _wait_for(path: Path, pattern: str, proc: subprocess.Popen[str], within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not list(path.glob(pattern)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no {pattern} in {path}"
        time.sleep(0.05)


def _start(mini: Suite, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    marks = tmp_path / "marks"
    marks.mkdir()
    command = [
        sys.executable, "-m", "harness", "run", f"{TARGETS}:Stuck", "--suite", str(mini.root),
        "--timeout", "3600", "--json", str(tmp_path / "report.json"), "-v", *extra,
    ]  # fmt: skip
    env = {**os.environ, "HOSTILE_MARKS": str(marks)}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )


@pytest.mark.parametrize(
    ("signals", "code"),
    [
        ([signal.SIGINT], 130),
        ([signal.SIGINT, signal.SIGINT], 130),
        ([signal.SIGTERM], 143),
    ],
    ids=["ctrl-c", "ctrl-c-twice", "sigterm"],
)
@pytest.mark.parametrize("how", ["-j 1", "-j 2", "--in-process"])
def test_a_signal_stops_a_stuck_run_cleanly(
    mini: Suite, tmp_path: Path, signals: list[signal.Signals], code: int, how: str
) -> None:
    before = live_children()
    proc = _start(mini, tmp_path, *how.split())
    _wait_for(tmp_path / "marks", "stuck-*", proc)
    sent = time.monotonic()
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.05)
    try:  # the case's timeout is an hour: a run that waits for it, not the signal, fails here
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"not stopped {time.monotonic() - sent:.0f} s after the signal")
    assert proc.returncode == code, output
    assert "interrupted (" in output and "runs finished" in output
    assert not wait_for_children(before), output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["interrupted"] is True and report["ok"] is False
    finished = {r["case"] for r in report["results"]}
    assert BAD not in finished  # the case that was stopped is not reported as a result
    assert finished <= set(CASES)
    assert all(r["status"] == "passed" for r in report["results"])
