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


class Daemonizes(_Base):
    """With every new assembler, starts a daemon: a double fork and `setsid`, so the survivor is
    in another session and process group, its parent gone (it sleeps five minutes)."""

    def __init__(self) -> None:
        super().__init__()
        # The daemon is marked before the assembler is made: on a loaded machine the run could
        # otherwise end, and end the daemon, before the daemon had run a line.
        ready, marked = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                _mark("daemon")
                os.close(marked)
                for fd in (0, 1, 2):  # a daemon lets go of the pipes
                    os.close(fd)
                time.sleep(300)
            os._exit(0)
        os.close(marked)
        os.read(ready, 1)  # b"" once the daemon has closed its end (the child closed its own)
        os.close(ready)
        os.wait()


# -- odd values (issue 21 class 8): what a target returns must never break the harness ----------


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


class _OddError(Exception):
    kind = "protocol"


class _KindRaisesError(Exception):
    @property
    def kind(self) -> str:
        raise RuntimeError("the kind property exploded")


class _StrRaisesError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the __str__ exploded")


class _StrRaisesProtocolError(_OddError):
    def __str__(self) -> str:
        raise RuntimeError("the __str__ exploded")


class _RecursiveRepr:
    def __repr__(self) -> str:
        return repr(self)


class HugeInteger(_Base):
    """reasoning_tokens is an integer of 100,000 digits."""

    @property
    def reasoning_tokens(self) -> int:
        return 10**100_000


class KindRaises(_Base):
    def act(self, pushes: int) -> None:
        raise _KindRaisesError("push failed")


class StrRaises(_Base):
    def act(self, pushes: int) -> None:
        raise _StrRaisesError()


class StrRaisesProtocol(_Base):
    def act(self, pushes: int) -> None:
        raise _StrRaisesProtocolError()


class DeepEvents(_Base):
    """push returns a list 10,000 levels deep."""

    def push(self, data: str) -> list[Any]:
        self.inner.push(data)
        return [_deep(10_000)]


class DeepId(_Base):
    @property
    def id(self) -> Any:
        return _deep(10_000)


class RecursiveReprId(_Base):
    @property
    def id(self) -> Any:
        return _RecursiveRepr()


class NaNTokens(_Base):
    @property
    def reasoning_tokens(self) -> Any:
        return float("nan")
