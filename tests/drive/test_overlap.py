"""The next case sent ahead (`ProcessDriver.plan_next`): the program works on it while the harness
checks the current one, and nothing of one case is ever another's: its replies, its crash, its
timeout, its stderr. tests/programs/overlap_v2.py misbehaves on marked payloads."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.process import ProcessDriver
from harness.errors import TargetCrash, TargetTimeout

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "overlap_v2.py"
STRICT = Path(__file__).resolve().parents[1] / "programs" / "strict_v1.py"

Steps = tuple[list[dict[str, Any]], dict[str, Any]]


def pushes(case_id: str, marker: str = "") -> list[str]:
    """A short case whose payloads carry `case_id` (logged to stderr) and `marker`."""
    first = {"id": case_id, "choices": [{"index": 0, "delta": {"content": "a" + marker}}]}
    last = {
        "id": case_id,
        "choices": [{"index": 0, "delta": {"content": "b"}, "finish_reason": "stop"}],
    }
    return [json.dumps(first), json.dumps(last)]


def play(driver: Any, case: Sequence[str], after: Sequence[str] | None = None) -> Steps:
    """One case as the runner plays it: its plan, the plan of the case after it, every reply."""
    driver.start_case()
    if hasattr(driver, "plan"):
        driver.plan(case, finish=False)
    if after is not None:
        driver.plan_next(after, finish=False)
    steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
    return steps, driver.finish(False)


def logged(stderr: str) -> list[str]:
    """The lines the program logged, as a report shows them (shortened, under a heading)."""
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("pushed")]


def expected(case: Sequence[str]) -> Steps:
    return play(InProcessDriver(load_target("reference:Assembler")), case)


@pytest.fixture
def driver() -> Any:
    with ProcessDriver([sys.executable, str(PROGRAM)], timeout=10) as made:
        made.start()
        assert made.protocol == 2
        yield made


def test_the_program_works_on_the_next_case_while_this_one_is_checked(driver: Any) -> None:
    slow = pushes("c2", "SLOW")  # a second's work for the program
    assert play(driver, pushes("c1"), after=slow) == expected(pushes("c1"))
    time.sleep(2)  # the harness checking c1 (the program has had c2 since c1 was answered)
    began = time.monotonic()
    assert play(driver, slow) == expected(slow)
    assert time.monotonic() - began < 0.9  # its second was spent while the harness was busy


def test_stderr_written_in_the_next_case_is_not_this_ones(driver: Any) -> None:
    # c1 logs its first push a second late: only a case answered in full ends its stderr.
    assert play(driver, pushes("c1", "SLOW"), after=pushes("c2")) == expected(pushes("c1", "SLOW"))
    deadline = time.monotonic() + 10  # until the program has logged c2's pushes
    while time.monotonic() < deadline and "pushed c2" not in driver._worker.stderr_since(0):
        time.sleep(0.05)
    assert "pushed c2" in driver._worker.stderr_since(0)
    assert logged(driver.case_stderr()) == ["pushed c1", "pushed c1"]
    play(driver, pushes("c2"))
    assert logged(driver.case_stderr()) == ["pushed c2", "pushed c2"]


def test_a_case_not_sent_ahead_has_none_of_the_case_befores_stderr(driver: Any) -> None:
    """All a case wrote to stderr is in the pipe once its last reply is read: the next case, sent
    in its turn (too large to go ahead, or none was planned), begins after it."""
    for _ in range(20):  # the harness may happen to read it between replies: try it often
        assert play(driver, pushes("c1")) == expected(pushes("c1"))
        play(driver, pushes("c2"))
        assert logged(driver.case_stderr()) == ["pushed c2", "pushed c2"]


@pytest.mark.parametrize(
    ("marker", "message"),
    [("EXIT", "exited with status 3"), ("GARBAGE", "not JSON")],
)
def test_a_crash_drops_the_next_case_and_the_new_program_gets_it(
    driver: Any, marker: str, message: str
) -> None:
    first = driver.pid
    # GARBAGE answers every request (one line too many is not it): c2 is sent before the
    # harness reads the bad line, and is lost with the program.
    with pytest.raises(TargetCrash, match=message) as crash:
        play(driver, pushes("c1", marker), after=pushes("c2"))
    assert "pushed c2" not in crash.value.details
    assert play(driver, pushes("c2")) == expected(pushes("c2"))
    assert driver.pid != first
    assert logged(driver.case_stderr()) == ["pushed c2", "pushed c2"]


def test_a_crash_in_the_next_case_is_never_this_ones(driver: Any) -> None:
    driver.start_case()
    case = pushes("c1")
    driver.plan(case, finish=False)
    driver.plan_next(pushes("c2", "EXIT"), finish=False)
    time.sleep(0.5)  # c1 is answered: the first read sends c2, which the program dies of
    steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
    assert (steps, driver.finish(False)) == expected(case)
    with pytest.raises(TargetCrash, match="exited with status 3"):
        play(driver, pushes("c2", "EXIT"))
    assert play(driver, pushes("c3")) == expected(pushes("c3"))


def test_a_program_gone_after_this_case_leaves_this_cases_replies(driver: Any) -> None:
    # It exits once it has answered c1: sending c2 fails, and c1's replies are still c1's.
    case = pushes("c1", "SLOW QUIT")  # so c1 is not answered yet when c2 is planned
    driver.start_case()
    driver.plan(case, finish=False)
    driver.plan_next(pushes("c2"), finish=False)
    time.sleep(1.5)  # c1 is answered and the program gone: the first read tries to send c2
    steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
    assert (steps, driver.finish(False)) == expected(case)
    with pytest.raises(TargetCrash, match="exited with status 0 before answering new"):
        play(driver, pushes("c2"))
    assert play(driver, pushes("c3")) == expected(pushes("c3"))


def test_a_hang_in_the_next_case_is_its_own_timeout() -> None:
    with ProcessDriver([sys.executable, str(PROGRAM)], timeout=1) as driver:
        assert play(driver, pushes("c1"), after=pushes("c2", "HANG")) == expected(pushes("c1"))
        time.sleep(1.5)  # longer than the time allowed: only waiting counts
        began = time.monotonic()
        with pytest.raises(TargetTimeout, match="no reply to push within 1 s"):
            play(driver, pushes("c2", "HANG"))
        assert time.monotonic() - began < 5
        assert play(driver, pushes("c3")) == expected(pushes("c3"))


def test_a_case_that_is_not_the_one_sent_ahead_drops_its_replies(driver: Any) -> None:
    # The runner retries c1 (another outcome) instead of going on to c2: c2's replies are read
    # and dropped, and neither they nor its stderr reach the case that runs.
    play(driver, pushes("c1"), after=pushes("c2"))
    time.sleep(0.3)
    assert play(driver, pushes("c3")) == expected(pushes("c3"))
    assert logged(driver.case_stderr()) == ["pushed c3", "pushed c3"]
    # The same with a next case that kills the program: the case that runs is not blamed.
    first = driver.pid
    play(driver, pushes("c4"), after=pushes("c5", "EXIT"))
    assert play(driver, pushes("c6")) == expected(pushes("c6"))
    assert driver.pid != first
    # And a case with no plan at all (pushed one by one).
    play(driver, pushes("c7"), after=pushes("c8"))
    driver.start_case()
    case = pushes("c9")
    steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
    assert (steps, driver.finish(False)) == expected(case)


def test_the_next_case_with_another_finish_is_not_taken(driver: Any) -> None:
    play(driver, pushes("c1"), after=pushes("c2"))
    driver.start_case()
    case = pushes("c2")
    driver.plan(case, finish=True)  # the same pushes, another finish: sent again
    steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
    capped = driver.finish(True)
    assert capped["completion"]["thinking_capped"] is True
    assert steps == expected(case)[0]


def test_a_version_1_program_gets_nothing_ahead() -> None:
    with ProcessDriver([sys.executable, str(STRICT)], timeout=10) as driver:
        driver.start()
        assert driver.protocol == 1
        driver.start_case()
        sent = driver._worker.seq
        driver.plan_next(pushes("c2"), finish=False)
        assert driver._worker.seq == sent
        case = pushes("c1")
        steps = [driver.push(data, line) for line, data in enumerate(case, 1)]
        assert (steps, driver.finish(False)) == expected(case)


def _escaped(letter: str, count: int, size: int) -> list[str]:
    """A case of `count` deltas of `size` letters and a quote (escaped in the JSON)."""
    delta = {"content": letter * size + '"'}
    first = [{"id": "c", "choices": [{"index": 0, "delta": delta}]} for _ in range(count)]
    last = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return [json.dumps(p) for p in [*first, last]]


def test_a_case_whose_texts_are_in_the_replies_file_is_read_before_the_next_is_sent() -> None:
    # Protocol 4: the next case's `new` lets the program write over the replies' file, where this
    # case's completion (a long escaped text) waits to be read.
    from harness.drive.spec import python_target_driver

    this, after = _escaped("a", 400, 200), _escaped("b", 6, 15_000)
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        assert worker.protocol == 4
        worker.start_case()
        worker.plan(this, finish=False)
        worker.plan_next(after, finish=False)
        pipe, deadline = worker._worker, time.monotonic() + 20
        while pipe.lines_in < pipe.seq and time.monotonic() < deadline:  # every reply read, so
            pipe.read_ready()  # the next case could go now
            time.sleep(0.01)
        assert pipe.lines_in == pipe.seq
        for line, data in enumerate(this, 1):
            worker.push(data, line)
        completion = worker.finish(False)["completion"]
        assert completion["content"] == ("a" * 200 + '"') * 400
        assert play(worker, after) == expected(after)  # and the next case still runs


def test_a_case_s_stderr_pushed_out_by_the_next_case_s_is_said_so() -> None:
    from harness.drive.pipes import Worker, new_family

    # The program logs this case's line, then (told to go on) the next case's 200 KB.
    program = (
        "import sys; sys.stderr.write('this case\\n'); sys.stderr.flush(); sys.stdin.readline();"
        "sys.stderr.write('next case\\n' * 20000); sys.stderr.flush(); sys.stdin.readline()"
    )
    worker = Worker([sys.executable, "-c", program], None, family=new_family())

    def logged_at_least(size: int) -> int:
        deadline = time.monotonic() + 20
        while (mark := worker.stderr_mark(drain=True)) < size and time.monotonic() < deadline:
            time.sleep(0.01)
        return mark

    try:
        mark = worker.stderr_mark()
        end = logged_at_least(len("this case\n"))  # this case's stderr ends here
        worker.send(b"go\n", time.monotonic() + 10)
        logged_at_least(end + len("next case\n") * 20000)
        shown = worker.stderr_since(mark, end)
        assert "next case" not in shown and "no longer kept" in shown, shown
    finally:
        worker.stop(kill=True)


def test_holds_follows_the_replies_taken() -> None:
    from harness.drive.pipes import Worker, new_family

    program = (
        "import sys, time; sys.stdout.write('x\\n\"at\"\\ny\\n'); sys.stdout.flush(); time.sleep(5)"
    )
    worker = Worker([sys.executable, "-c", program], None, family=new_family())
    try:
        deadline = time.monotonic() + 10
        while worker.lines_in < 3 and time.monotonic() < deadline:
            worker.read_ready()
            time.sleep(0.01)
        assert worker.holds(b'"at"')  # all three read, none taken
        assert worker.receive(deadline) == b"x" and worker.holds(b'"at"')
        assert worker.receive(deadline) == b'"at"' and not worker.holds(b'"at"')
        assert worker.receive(deadline) == b"y" and not worker.holds(b'"at"')
    finally:
        worker.stop(kill=True)
