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
from harness.drive.messages import pass_mark
from harness.drive.pipes import PassMarks
from harness.drive.process import ProcessDriver
from harness.drive.spec import python_target_driver
from harness.suite.cases import Suite
from tests.check.test_batched import NAMES, TARGETS

#: Prints a line to stderr at each new assembler and at each push (the case's own), and fails
#: the cases with tool calls (so their results carry their stderr).
LOUD = """
import sys
from tests.miniatures import RepeatsToolCallId


class Loud(RepeatsToolCallId):
    def __init__(self):
        super().__init__()
        print("a new assembler", file=sys.stderr)

    def push(self, data):
        print(f"push {data[:60]}", flush=True)  # stdout: stderr in a worker, written late
        return super().push(data)
"""

#: Hangs once, on the second push of `server_error`'s recording (its chat completion's id), in
#: whichever pass meets it first; `FLAG` says it did.
HANGS = """
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
"""

#: Logs its first two pushes to stderr and fails every case at finish (each result carries its
#: stderr); a case too large to send ahead runs one call at a time between two that are not.
LOGS = """
import sys
import reference
class Logs(reference.Assembler):
    def __init__(self):
        super().__init__(); self.pushes = 0
    def push(self, data):
        self.pushes += 1
        if self.pushes <= 2: print("push", self.pushes, len(data), file=sys.stderr)
        return super().push(data)
    def finish(self, capped):
        raise reference.InferError(reference.ErrorKind.PROTOCOL, "always fails")
"""

#: content_stop dies at finish from its third cut; server_error fails its first cut, logging.
DIES = """
import os, sys
import reference
class Dies(reference.Assembler):
    def __init__(self):
        super().__init__(); self.pushes = 0; self.tag = ""
    def push(self, data):
        self.pushes += 1
        if self.pushes == 1: self.tag = data[data.find('"id"'):][:30]
        print("push", self.pushes, self.tag, file=sys.stderr)
        return super().push(data)
    def finish(self, capped):
        if "hjt9O" in self.tag and self.pushes >= 3:
            os._exit(3)
        if "Xkimk" in self.tag and self.pushes < 4:
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "server_error fails")
        return super().finish(capped)
"""

#: Writes bytes that look like the worker's pass mark to its stderr, and the start of one last.
MARKS = """
import os
from tests.miniatures import RepeatsToolCallId
class Marks(RepeatsToolCallId):
    def push(self, data):
        print("push", data[:40], flush=True)
        if '"length"' in data:
            os.write(2, b"log: \\x00conform pass 0123456789abcdef\\x00\\n")  # a guess
        return super().push(data)
    def finish(self, capped):
        os.write(2, b"finish\\x00conform")  # no line feed: the start of a mark
        return super().finish(capped)
"""

#: Shares state between assemblers: the first pass of i2_timings_beyond_safe_integer makes the
#: second `new` after it fail. The pass of i2_timings_counts_beyond_safe_integer, read ahead,
#: ends in its golden error step either way.
POISONS = """
import reference
POISON = [0]
DONE = []
class Poisons(reference.Assembler):
    def __init__(self):
        if POISON[0]:
            POISON[0] -= 1
            if POISON[0] == 0:
                raise RuntimeError("poisoned new")
        super().__init__(); self.n = 0
    def push(self, data):
        self.n += 1
        events = super().push(data)
        if self.n == 1 and chr(34) + "chatcmpl-i2-timings" + chr(34) in data and not DONE:
            DONE.append(1)
            POISON[0] = 2
            return []
        return events
"""

#: Each odd target of the stderr checks: the cases and modes that show it.
ODD: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Logs": (
        (
            "synthetic/r1_two_choices_one_chunk",
            "synthetic/r2_payload_above_1_mib",
            "synthetic/r3_no_timings",
        ),
        ("plain",),
    ),
    "Dies": (
        ("llama-server/content_length", "llama-server/content_stop", "llama-server/server_error"),
        ("truncated",),
    ),
    "Marks": (
        ("llama-server/content_length", "llama-server/tool_call", "llama-server/server_error"),
        ("plain",),
    ),
}

CASES = (
    "llama-server/content_length",
    "llama-server/tool_call",
    "llama-server/server_error",
    "synthetic/i2_timings_beyond_safe_integer",  # outcomes tried in turn
    "synthetic/r2_payload_above_1_mib",  # too large to send ahead
)
MODES = ("plain", "key-order", "truncated")


def _drivers(spec: str) -> tuple[ProcessDriver, BatchedDriver]:
    """One call at a time, and passes sent ahead, of the same worker."""
    command, env = worker_command(spec)
    plain = ProcessDriver(command, env=env, label=spec, own_worker=True, timeout=60)
    batched = python_target_driver(spec, timeout=60)
    assert isinstance(batched, BatchedDriver)
    return plain, batched


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
    sources = (TARGETS, LOUD, LOGS, DIES, MARKS, POISONS)
    (folder / "targets.py").write_text("\n".join(sources), encoding="utf-8")
    return folder / "targets.py"


@pytest.mark.parametrize("name", [*NAMES, "Loud"])
def test_passes_sent_ahead_give_what_one_call_at_a_time_gives(
    suite: Suite, targets: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = name if ":" in name else f"{targets}:{name}"
    plain, batched = _drivers(spec)
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


@pytest.mark.parametrize("name", ODD)
def test_each_case_shows_its_own_stderr(suite: Suite, targets: Path, name: str) -> None:
    """Whatever ran between a pass and its case's report: a case run one call at a time (too
    large to send ahead), a worker that died, bytes like a mark in the target's own stderr."""
    cases, modes = ODD[name]
    plain, batched = _drivers(f"{targets}:{name}")
    expected = _results(plain, suite, modes, cases)
    assert any(result.stderr for result in expected)
    assert _results(batched, suite, modes, cases) == expected


def test_a_call_read_ahead_is_reported_as_itself(suite: Suite, targets: Path) -> None:
    """A pass read ahead is checked call by call as it is replayed: its golden error step is no
    crash at the `new` the worker answered last (a target whose assemblers share state)."""
    cases = (
        "synthetic/i2_i3_read_exactly_then_deep_ignored",
        "synthetic/i2_timings_beyond_safe_integer",
        "synthetic/i2_timings_counts_beyond_safe_integer",
    )
    _, batched = _drivers(f"{targets}:Poisons")
    found = _results(batched, suite, ("plain",), cases)
    assert [result.crash for result in found[2:]] == [None], found


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
            run(
                suite.cases(cases), driver, modes=("plain", "truncated"), options=RunOptions(seed=5)
            )
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


PASS_MARK = pass_mark("0123abcd")


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_pass_marks_are_found_however_stderr_is_split(size: int) -> None:
    stream = b"a" + PASS_MARK + b"b\x00c" + PASS_MARK + PASS_MARK + b"\x00conform" + PASS_MARK
    marks = PassMarks(PASS_MARK)
    kept = b""
    for start in range(0, len(stream), size):
        kept += marks.taken(stream[start : start + size], len(kept))
    kept += marks.rest()
    assert kept == b"ab\x00c\x00conform"
    assert marks.starts == [1, 4, 4, 12]


def test_a_mark_cut_short_at_the_end_is_kept_as_written() -> None:
    marks = PassMarks(PASS_MARK)
    assert marks.taken(b"x" + PASS_MARK[:5], 0) == b"x"
    assert marks.rest() == PASS_MARK[:5] and marks.starts == []
