"""The fast form of `ProcessDriver`'s calls, for conform's own worker: a whole pass in one request,
and the next pass sent before this one's replies are read.

Through a worker, each call (`new`, a `push`, `finish`) is a round trip between two processes,
and a suite is tens of thousands of calls: one at a time, the whole suite through a worker took
about three times as long as in-process. `BatchedDriver.run_pass` sends a pass's calls in one
request (`harness.drive.messages.Pass`, which only conform's own worker takes) and reads the
worker's replies one call at a time, as the worker writes them: each reply within the time
allowed for one call from the moment the one before it was read, each checked and turned into a
step exactly as `ProcessDriver.push` and `finish` do, a crash or a timeout raised at the call it
happened in. So a pass gives what `start_case`, each `push` and `finish` give one call at a time
(`tests/check/test_batched.py` holds the two to each other); `harness.check.batched` is the
runner's side.

Even so, the harness and its worker took turns: the worker waited while the harness made the next
pass's payloads and compared the last one's steps, and the suite took twice as long as in-process.
So the runner sends the next case's first pass ahead (`send_ahead`), and the worker runs it while
the harness reads and compares the pass before it. A pass sent ahead is still the next case's:

- its stderr: the worker writes a mark to stderr as each pass begins (`messages.pass_mark`, with
  a token drawn for each worker), so what a pass wrote is told from what the pass after it wrote
  (`Worker.pass_stderr`);
- its crash or timeout: a pass that must be sent while one is ahead (a second outcome, the next
  cut) first reads the one ahead to its end, keeping its replies, or how the worker failed in it,
  for when its case asks for them (`_Sent`); a worker stopped before it ran the pass ahead (a
  crash or a timeout in the pass before it) runs it again when its case asks.
"""

from __future__ import annotations

import secrets
import select
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.drive import fastlines
from harness.drive.messages import Failed, Finish, New, Pass, Push, Reply, Request, pass_mark
from harness.drive.pipes import Worker
from harness.drive.process import ProcessDriver, ProgramInfo
from harness.errors import TargetCrash

#: The longest pass sent ahead: a line the pipe takes whole or not at all, never half of it
#: (about nine passes in ten of the shipped suite's).
AHEAD_BYTES = select.PIPE_BUF
#: Passes sent ahead at once, at most: the case under way's, its next cut's (`truncated`) and
#: the next case's.
AHEAD = 3
#: Passes sent ahead and read before their cases asked, kept at most (a case that asks for none
#: of them, its golden file out of date, leaves them).
KEPT = 4


@dataclass(eq=False)
class _Sent:
    """A pass sent to a worker, and what of its replies was read before its case asked for them."""

    request: Pass
    lines: Sequence[int]  # each push's recording line
    worker: Worker  # the worker it went to
    ordinal: int  # which of the worker's passes it is (its stderr: `Worker.pass_stderr`)
    read: list[bytes] = field(default_factory=list)  # reply lines read ahead of their case
    broken: TargetCrash | None = None  # how the worker failed in it, found while reading ahead
    ended: bool = False  # every reply it gets is read


class BatchedDriver(ProcessDriver):
    """A `ProcessDriver` of conform's own worker, which also runs a whole pass in one request,
    sends the next one ahead, and writes and reads its lines the fast way
    (`harness.drive.fastlines`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._passes = 0  # passes sent to the running worker (its next pass's ordinal)
        self._flying: deque[_Sent] = deque()  # passes sent ahead, oldest first, not yet read
        self._kept: list[_Sent] = []  # passes sent ahead and read before their cases asked
        self._current: _Sent | None = None  # the pass being read (None: one call at a time)
        self._mark = ""  # the running worker's pass mark (`messages.pass_mark`)

    def _line(self, request: Request) -> bytes:
        if isinstance(request, Pass):
            return fastlines.pass_line(request)
        return super()._line(request)

    def _read(self, line: bytes, request: Request) -> Reply:
        return fastlines.own_reply(line, request, self._validator)

    def start(self) -> ProgramInfo:
        if self._worker is None:
            self._passes, self._current = 0, None
            self._mark = secrets.token_hex(8)  # a target's own output never holds the mark
            info = super().start()
            assert self._worker is not None
            self._worker.count_passes(pass_mark(self._mark))
            return info
        return super().start()

    def start_case(self) -> None:
        self._settle_ahead()
        self.start()
        assert self._worker is not None
        self._worker.unmarked_pass()  # where the passes before it end
        self._passes += 1
        self._current = None
        super().start_case()

    def case_stderr(self) -> str:
        """What the program wrote to stderr in the pass read last (its own, though the next
        pass may run already), or since the case began (one call at a time)."""
        sent = self._current
        return super().case_stderr() if sent is None else sent.worker.pass_stderr(sent.ordinal)

    def _stderr(self, worker: Worker) -> str:
        sent = self._current
        if sent is None or sent.worker is not worker:
            return super()._stderr(worker)
        return worker.pass_stderr(sent.ordinal)

    def close(self) -> None:
        self._flying.clear()
        self._kept.clear()
        self._current = None
        super().close()

    # -- a pass -------------------------------------------------------------------------------

    def send_ahead(
        self, pushes: Sequence[str], lines: Sequence[int], thinking_capped: bool | None
    ) -> object | None:
        """Send a pass (as `run_pass` takes it) before the one under way is read, for the worker
        to run after those sent before it; what to give `run_pass` to read it, or None when it was
        not sent (no worker runs, `AHEAD` passes are ahead already, or its line is longer than
        `AHEAD_BYTES`)."""
        worker = self._worker
        if worker is None or len(self._flying) >= AHEAD:
            return None
        request = Pass(self._seq + 1, list(pushes), thinking_capped, self._mark)
        line = self._line(request)
        if len(line) > AHEAD_BYTES or not worker.send_now(line):
            return None
        self._next_seq()
        sent = self._sent(request, lines, worker)
        self._flying.append(sent)
        return sent

    def run_pass(
        self,
        pushes: Sequence[str],
        lines: Sequence[int],
        thinking_capped: bool | None,
        *,
        ahead: object | None = None,
    ) -> Iterator[dict[str, Any] | None]:
        """A fresh assembler, `pushes` (at `lines`) up to the first error step, then `finish`
        with `thinking_capped` unless it is None: None for `new`, then each step and the finish
        object, each as its reply is read (TargetCrash or TargetTimeout at the call it ends).
        `ahead`: what `send_ahead` gave for this very pass, which is not sent again."""
        sent = self._taken(ahead)
        if sent is None:
            self._settle_ahead()
            self.start()
            assert self._worker is not None
            request = Pass(self._next_seq(), list(pushes), thinking_capped, self._mark)
            sent = self._sent(request, lines, self._worker)
            allowed = self._timeout
            self._current = sent
            self._send(request, time.monotonic() + allowed, allowed, answering=New(request.seq))
        self._current = sent
        return self._replies(sent)

    def _taken(self, ahead: object | None) -> _Sent | None:
        """The pass `ahead` stands for, when it can be read without sending it again: read
        already, or next to be read from the running worker (those sent before it are read
        first, and kept for their cases)."""
        if isinstance(ahead, _Sent) and ahead in self._kept:
            self._kept.remove(ahead)
            return ahead
        if not isinstance(ahead, _Sent) or ahead not in self._flying:
            return None
        while self._flying[0] is not ahead:
            self._settle(self._flying.popleft())
        self._flying.popleft()
        return ahead if ahead.worker is self._worker else None  # else: it never ran

    def _sent(self, request: Pass, lines: Sequence[int], worker: Worker) -> _Sent:
        self._passes += 1
        return _Sent(request, lines, worker, self._passes - 1)

    def _settle_ahead(self) -> None:
        """Before anything more is sent: each pass ahead read to its end (`_settle`)."""
        while self._flying:
            self._settle(self._flying.popleft())

    def _settle(self, sent: _Sent) -> None:
        """`sent`, sent ahead, read to its end, its replies (or how the worker failed in it) kept
        for its case; forgotten when its worker stopped before it ran (its case sends it again)."""
        if sent.worker is not self._worker:
            return
        self._kept = [*self._kept[-(KEPT - 1) :], sent]
        current, self._current = self._current, sent
        try:
            for line in self._lines(sent):
                sent.read.append(line)
        except TargetCrash as crash:
            sent.broken = crash
        except BaseException:  # the run is stopping (an interrupt): nothing is kept
            self._kept.remove(sent)
            raise
        finally:
            self._current = current
        sent.ended = True

    def _lines(self, sent: _Sent) -> Iterator[bytes]:
        """The reply lines of `sent` not read yet, from its worker, each checked as far as it
        says whether the worker ends the pass there (TargetCrash as `_checked` raises it)."""
        calls = sent.request.calls()
        allowed = self._timeout
        deadline = time.monotonic() + allowed
        for call in calls[len(sent.read) :]:
            line = self._received(call, deadline, allowed)
            deadline = time.monotonic() + allowed  # the next call's time starts now
            step = None  # read as `_replies` reads it: a plain step as it is, else checked
            if isinstance(call, Push) and not self._validator:
                step = fastlines.own_step(line, call, 0)
            ends = step is None and isinstance(self._checked(self._parsed(line, call)), Failed)
            yield line
            if ends:
                return  # the worker ended the case here

    def _replies(self, sent: _Sent) -> Iterator[dict[str, Any] | None]:
        """`run_pass`'s steps of `sent`: from the lines read ahead, then from its worker."""
        calls = sent.request.calls()
        allowed = self._timeout
        deadline = time.monotonic() + allowed
        read = iter(sent.read)
        answered = False  # every reply of the pass is read: the worker is in step
        try:
            for number, call in enumerate(calls):
                line = next(read, None)
                self._last = call  # the call a crash is reported at (as `_received` does)
                if line is None:
                    if sent.broken is not None:
                        raise sent.broken
                    assert not sent.ended, "a pass read to its end has no more replies"
                    line = self._received(call, deadline, allowed)
                deadline = time.monotonic() + allowed  # the next call's time starts now
                answered = number == len(calls) - 1
                if isinstance(call, Push):
                    at = sent.lines[number - 1]
                    step = None if self._validator else fastlines.own_step(line, call, at)
                    if step is None:  # not a plain step: read as any reply is
                        step = self._step(self._checked(self._parsed(line, call)), at)
                    answered = answered or "error" in step  # the worker ended the case here
                    yield step
                    if "error" in step:
                        return
                    continue
                reply = self._checked(self._parsed(line, call))
                if isinstance(call, New):
                    yield None
                else:
                    assert isinstance(call, Finish)
                    yield self._finished(reply)
        except GeneratorExit:  # left before the pass ended: the worker is out of step
            if not answered and not sent.ended and sent.worker is self._worker:
                self._discard()
            raise
