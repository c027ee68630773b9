"""Python targets that misbehave at the third push of a case (see `mini_suite`), each a subclass
of the reference that is right everywhere else, and one that is simply wrong."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Any

import reference


class _AtThirdPush(reference.Assembler):
    def __init__(self) -> None:
        super().__init__()
        self.pushes = 0

    def push(self, data: str) -> Any:
        self.pushes += 1
        if self.pushes == 3:
            self.misbehave()
        return super().push(data)

    def misbehave(self) -> None:
        raise NotImplementedError


class SleepsInPush(_AtThirdPush):
    def misbehave(self) -> None:
        print("sleeps-in-push: going to sleep", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)


class ExitsInPush(_AtThirdPush):
    def misbehave(self) -> None:
        print("exits-in-push: bye", file=sys.stderr, flush=True)
        os._exit(3)


class Segfaults(_AtThirdPush):
    def misbehave(self) -> None:
        ctypes.string_at(0)


class ExhaustsMemory(_AtThirdPush):
    def misbehave(self) -> None:
        # 3 GiB of address space: beyond the worker's 2 GiB limit, so it fails at once.
        self.hoard = bytearray(3 * 1024**3)


class RaisesInPush(_AtThirdPush):
    def misbehave(self) -> None:
        raise KeyError("no such chunk")


class Prints(_AtThirdPush):
    """Right everywhere, but chatty on stdout and stderr (and reads stdin)."""

    def misbehave(self) -> None:
        print("PRINTS-ON-STDOUT")
        print("PRINTS-ON-STDERR", file=sys.stderr)
        sys.stdin.read()
        os.write(1, b"PRINTS-ON-FD-1\n")


class DropsReasoning(reference.Assembler):
    """Wrong: leaves out every reasoning event (the completion is still right)."""

    def push(self, data: str) -> Any:
        return [e for e in super().push(data) if not isinstance(e, reference.Reasoning)]
