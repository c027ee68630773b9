"""The odd Python targets of tests/cli/test_fuzz.py, in a module of their own: a `conform fuzz`
process (or its worker) that runs one imports this alone.

Each is `DropsServerMessage` of tests/miniatures.py (a server error's message lost: one real bug,
found within a few streams of any seed) with one more way of behaving that a fuzz run must take
well: a difference that shows only every other time, and a Ctrl-C that comes while a difference
is being shrunk.
"""

from __future__ import annotations

import json
import os
import signal

from reference import ErrorKind, InferError
from tests.miniatures import DropsServerMessage


class FlakyServerMessage(DropsServerMessage):
    """Loses the server's message in one assembler of two (as a race would): the difference
    does not reproduce every time, so it must be reported as flaky, never kept as a case."""

    made = 0

    def __init__(self) -> None:
        super().__init__()
        FlakyServerMessage.made += 1
        if FlakyServerMessage.made % 2:
            self.push = self.inner.push  # type: ignore[method-assign]  # this one is right


class InterruptedWhileShrinking(DropsServerMessage):
    """Sends Ctrl-C (SIGINT to its own process, as a terminal does) while conform shrinks the
    difference it found: at the twentieth assembler made after its first wrong answer (the
    finding is checked again four times first, then shrinking begins)."""

    wrong = 0
    after = 0

    def __init__(self) -> None:
        super().__init__()
        if InterruptedWhileShrinking.wrong:
            InterruptedWhileShrinking.after += 1
            if InterruptedWhileShrinking.after == 20:
                os.kill(os.getpid(), signal.SIGINT)

    def push(self, data: str) -> list[object]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER and _has_message(data):  # (without one, any
                InterruptedWhileShrinking.wrong += 1  # text is allowed: I8)
            raise


def _has_message(data: str) -> bool:
    """True when `data` is a server error with a message (the one DropsServerMessage loses)."""
    error = json.loads(data).get("error")
    return isinstance(error, dict) and bool(error.get("message"))
