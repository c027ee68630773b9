"""The odd Python targets of tests/cli/test_fuzz.py, in a module of their own: a `conform fuzz`
process (or its worker) that runs one imports this alone.

Each is `DropsServerMessage` of tests/miniatures.py (a server error's message lost: one real bug,
found within a few streams of any seed) with one more way of behaving that a fuzz run must take
well: a difference that does not show when the stream is checked again, and a Ctrl-C that comes
while a difference is being shrunk.
"""

from __future__ import annotations

import json
import os
import signal
from typing import ClassVar

from reference import ErrorKind, InferError
from tests.miniatures import DropsServerMessage


class FlakyServerMessage(DropsServerMessage):
    """Loses the server's message only the first time it is given each server error (as a race
    would, once): checked again, the stream passes, so the difference must be reported as flaky,
    never kept as a case. (Whatever number of assemblers a check makes.)"""

    seen: ClassVar[set[str]] = set()

    def push(self, data: str) -> list[object]:
        if data in FlakyServerMessage.seen:
            return self.inner.push(data)  # this one is right
        if _has_message(data):
            FlakyServerMessage.seen.add(data)
        return super().push(data)


class InterruptedWhileShrinking(DropsServerMessage):
    """Sends Ctrl-C (SIGINT to its own process, as a terminal does) while conform shrinks the
    difference it found: at the first wrong answer on a smaller stream than the first it was wrong
    on (fewer payloads, or as many with fewer characters): shrinking has begun and made progress.
    (Whatever number of assemblers the checks before it make.)"""

    first: tuple[int, int] | None = None  # (payloads, characters) of the first stream it erred on

    def __init__(self) -> None:
        super().__init__()
        self.payloads = self.characters = 0

    def push(self, data: str) -> list[object]:
        self.payloads += 1
        self.characters += len(data)
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER and _has_message(data):  # (without one, any
                size = (self.payloads, self.characters)  # text is allowed: I8)
                if InterruptedWhileShrinking.first is None:
                    InterruptedWhileShrinking.first = size
                elif size < InterruptedWhileShrinking.first:
                    os.kill(os.getpid(), signal.SIGINT)
            raise


def _has_message(data: str) -> bool:
    """True when `data` is a server error with a message (the one DropsServerMessage loses)."""
    if '"error"' not in data:
        return False
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        return False
    error = chunk.get("error") if isinstance(chunk, dict) else None
    return isinstance(error, dict) and bool(error.get("message"))
