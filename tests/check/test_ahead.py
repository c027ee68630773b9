"""Passes sent ahead (`harness.drive.batched`: the worker runs a case's first pass, and the next cut
of `truncated`, while the harness reads the pass before it) give what one call at a time gives: the
same results, mismatches, crashes and where they happened, and each case's own stderr; a crash or
a hang in a pass sent ahead is its own case's, whatever case was being read when it happened."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.check.modes import truncation_points
from harness.check.options import RunOptions
from harness.check.parallel import run
from harness.check.results import PASSED, TIMED_OUT, CaseResult
from harness.drive.batched import BatchedDriver
from harness.drive.forked import worker_command
from harness.drive.messages import PASS_MARK
from harness.drive.pipes import PassMarks
from harness.drive.process import ProcessDriver
from harness.drive.spec import python_target_driver
from harness.suite.cases import Suite
from tests.check.test_batched import NAMES, TARGETS

#: Prints a line to stderr at each new assembler and at each push (the case's own), and fails
#: the cases with tool calls (so their results carry their stderr).
LOUD = '''
import sys
from tests.miniatures import RepeatsToolCallId


class Loud(RepeatsToolCallId):
    def __init__(self):
        super().__init__()
        print("a new assembler", file=sys.stderr)

    def push(self, data):
        print(f"push {data[:60]}", flush=True)  # stdout: stderr in a worker, written late
        return super().push(data)
'''

#: Hangs once, on the second push of `server_error`'s recording (its chat completion's id), in
#: whichever pass meets it first; `FLAG` says it did.
HANGS = '''
import os
import time
import reference

FLAG = os.environ["HANG_FLAG"]


class HangsOnce(reference.Assembler):
    def __init__(self):
        super().__init__()
        self.pushes = 0

    def push(self, data):
        self.pushes += 1
        if self.pushes == 2 and "XkimkutB2oNazxlEtgSdAS8dEwmujY5p" in data:
            if not os.path.exists(FLAG):
                open(FLAG, "w").close()
                time.sleep(3600)
        return super().push(data)
'''

CASES = (
    "llama-server/content_length",
    "llama-server/tool_call",
    "llama-server/server_error",
    "synthetic/i2_timings_beyond_safe_integer",  # outcomes tried in turn
    "synthetic/r2_payload_above_1_mib",  # too large to send ahead
)
MODES = ("plain", "key-order", "truncated")


def _results(
    driver: ProcessDriver, suite: Suite, modes: tuple[str, ...], cases: tuple[str, ...] = CASES
) -> list[CaseResult]:
    try:
        found = run(suite.cases(cases), driver, modes=modes, options=RunOptions(seed=5))
        return [replace(result, duration=0.0) for result in found]
    finally:
        driver.close()


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ahead")
    (folder / "targets.py").write_text(TARGETS + LOUD, encoding="utf-8")
    return folder / "targets.py"


@pytest.mark.parametrize("name", [*NAMES, "Loud"])
def test_passes_sent_ahead_give_what_one_call_at_a_time_gives(
    suite: Suite, targets: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = name if ":" in name else f"{targets}:{name}"
    command, env = worker_command(spec)
    plain = ProcessDriver(command, env=env, label=spec, own_worker=True, timeout=60)
    batched = python_target_driver(spec, timeout=60)
    assert isinstance(batched, BatchedDriver)
    taken: list[object] = []  # passes read as they were sent ahead, not sent again
    take = BatchedDriver._taken

    def counted(self: BatchedDriver, ahead: object) -> object:
        sent = take(self, ahead)
        taken.append(sent)
        return sent

    monkeypatch.setattr(BatchedDriver, "_taken", counted)
    # A target that dies costs a new worker each time (0.3 s of CPU): two cases show it.
    cases = CASES[1:3] if name == "DiesAtFourthPush" else CASES
    expected = _results(plain, suite, MODES, cases)
    assert _results(batched, suite, MODES, cases) == expected
    if name == "Loud":  # each failing case shows its own pass's lines (its last 20), only those
        logged = [result.stderr.count("a new assembler") for result in expected if result.stderr]
        assert len(logged) >= 3 and max(logged) == 1, logged
    if name != "crashes_at_new":  # (a worker that cannot make an assembler runs no pass)
        assert sum(sent is not None for sent in taken) >= 4, "passes were read as sent ahead"


def test_a_hang_in_a_pass_sent_ahead_is_its_own_cases(
    suite: Suite, targets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`server_error` in plain mode is sent ahead while `content_length`'s cuts are read, and
    hangs there: its case times out at its second push, and every other case passes."""
    (targets.parent / "hangs.py").write_text(HANGS, encoding="utf-8")
    monkeypatch.setenv("HANG_FLAG", str(tmp_path / "hung"))
    cuts = truncation_points(8, seed=5, case_id="llama-server/content_length")
    assert len(cuts) >= 2, "a cut read after the pass that hangs"
    driver = python_target_driver(f"{targets.parent / 'hangs.py'}:HangsOnce", timeout=3)
    cases = ("llama-server/content_length", "llama-server/server_error")
    try:
        found = list(
            run(suite.cases(cases), driver, modes=("plain", "truncated"), options=RunOptions(seed=5))
        )
    finally:
        driver.close()
    statuses = [(result.case_id, result.mode, result.status) for result in found]
    assert statuses == [
        ("llama-server/content_length", "plain", PASSED),
        ("llama-server/content_length", "truncated", PASSED),
        ("llama-server/server_error", "plain", TIMED_OUT),
        ("llama-server/server_error", "truncated", PASSED),
    ]
    crash = found[2].crash
    assert crash is not None and crash.step == 1 and "no reply to push within 3 s" in crash.message


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_pass_marks_are_found_however_stderr_is_split(size: int) -> None:
    stream = b"a" + PASS_MARK + b"b\x00c" + PASS_MARK + PASS_MARK + b"\x00conform" + PASS_MARK
    marks = PassMarks()
    kept = b""
    for start in range(0, len(stream), size):
        kept += marks.taken(stream[start : start + size], len(kept))
    kept += marks.rest()
    assert kept == b"ab\x00c\x00conform"
    assert marks.starts == [1, 4, 4, 12]


def test_a_mark_cut_short_at_the_end_is_kept_as_written() -> None:
    marks = PassMarks()
    assert marks.taken(b"x" + PASS_MARK[:5], 0) == b"x"
    assert marks.rest() == PASS_MARK[:5] and marks.starts == []
