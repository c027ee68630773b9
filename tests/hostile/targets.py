"""Hostile targets: assemblers that attack the harness rather than get a rule wrong.

Each is the reference with one hostile act added: it hangs, starts processes that would outlive
the run, forks and dies, raises what Python programs should never catch, changes directory, or
comes from a factory that fails. `tests/hostile/` runs conform on them and checks that the run
stays in control: the right status, at the right call, no process left behind.

Acts that need the outside world read it from the environment: `HOSTILE_MARKS` is a folder where a
target writes a file once it is stuck (so a test knows when to send its signal), and
`HOSTILE_CHDIR` is where `ChangesDirectory` goes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.miniatures import _Base as Delegating


class _Base(Delegating):
    """The reference; subclasses add one hostile act."""

    def __init__(self) -> None:
        super().__init__()
        self.pushes = 0

    def push(self, data: str) -> list[Any]:
        self.pushes += 1
        self.act(self.pushes)
        return super().push(data)

    def act(self, pushes: int) -> None:
        """The hostile act, before push number `pushes` (from 1) is handled."""


def _mark(what: str) -> None:
    folder = os.environ.get("HOSTILE_MARKS")
    if folder:
        Path(folder, f"{what}-{os.getpid()}").write_text(what)


class Stuck(_Base):
    """Hangs for ever at the third push (only the mini suite's middle case has one)."""

    def act(self, pushes: int) -> None:
        if pushes == 3:
            _mark("stuck")
            while True:
                time.sleep(60)


class StartsChild(_Base):
    """Starts `sleep 300` with every new assembler, and hangs at the third push."""

    def __init__(self) -> None:
        super().__init__()
        subprocess.Popen(["sleep", "300"])

    def act(self, pushes: int) -> None:
        if pushes == 3:
            while True:
                time.sleep(60)


class Forks(_Base):
    """Forks with every new assembler; the copy sleeps for five minutes, holding the pipes."""

    def __init__(self) -> None:
        super().__init__()
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)


class ForksAndDies(_Base):
    """At the third push, forks a copy that holds the pipes open, and the original dies."""

    def act(self, pushes: int) -> None:
        if pushes == 3:
            if os.fork() == 0:
                time.sleep(300)
                os._exit(0)
            print("forker: the parent leaves now", file=sys.stderr, flush=True)
            os._exit(3)


class RaisesGeneratorExit(_Base):
    def act(self, pushes: int) -> None:
        raise GeneratorExit("from the target")


class Catastrophe(BaseException):
    """A target's own BaseException, outside Exception."""


class RaisesBaseException(_Base):
    def act(self, pushes: int) -> None:
        raise Catastrophe("the target's own BaseException")


class ChangesDirectory(_Base):
    """Changes the working directory (to `HOSTILE_CHDIR`) when it is made."""

    def __init__(self) -> None:
        super().__init__()
        os.chdir(os.environ["HOSTILE_CHDIR"])


def factory_raises() -> Any:
    raise ValueError("no assembler today")


def factory_returns_none() -> Any:
    return None


class HangsInInit(_Base):
    def __init__(self) -> None:
        while True:
            time.sleep(60)


class Large(_Base):
    """The reference, for the large-payload case (a name of its own in reports)."""
