"""The fast form of `ProcessDriver`'s calls, for conform's own worker: a whole pass in one request.

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
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from harness.drive import fastlines
from harness.drive.messages import Finish, New, Pass, Push, Reply, Request
from harness.drive.process import ProcessDriver


class BatchedDriver(ProcessDriver):
    """A `ProcessDriver` of conform's own worker, which also runs a whole pass in one request, and
    writes and reads its lines the fast way (`harness.drive.fastlines`)."""

    def _line(self, request: Request) -> bytes:
        if isinstance(request, Pass):
            return fastlines.pass_line(request)
        return super()._line(request)

    def _read(self, line: bytes, request: Request) -> Reply:
        return fastlines.own_reply(line, request, self._validator)

    def run_pass(
        self, pushes: Sequence[str], lines: Sequence[int], thinking_capped: bool | None
    ) -> Iterator[dict[str, Any] | None]:
        """A fresh assembler, `pushes` (at `lines`) up to the first error step, then `finish`
        with `thinking_capped` unless it is None: None for `new`, then each step and the finish
        object, each as its reply is read (TargetCrash or TargetTimeout at the call it ends)."""
        self.start()
        assert self._worker is not None
        self._case_mark = self._worker.stderr_mark()  # all before it is the case before's
        request = Pass(self._next_seq(), list(pushes), thinking_capped)
        calls = request.calls()
        allowed = self._timeout
        deadline = time.monotonic() + allowed
        self._send(request, deadline, allowed, answering=calls[0])
        answered = False  # every reply of the pass is read: the worker is in step
        try:
            for number, call in enumerate(calls):
                line = self._received(call, deadline, allowed)
                deadline = time.monotonic() + allowed  # the next call's time starts now
                answered = number == len(calls) - 1
                if isinstance(call, Push):
                    at = lines[number - 1]
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
            if not answered:
                self._discard()
            raise
