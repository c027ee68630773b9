"""What a Python target run in conform's own process (`--in-process`) may use up of that process:
its file descriptors, and its exit.

A target that opens descriptors and never closes them shares conform's table: once it is full,
conform itself could not read the next recording or write a report (the run once ended with exit
2 and no report). While such a run lasts, `DescriptorGuard` keeps a few descriptors in reserve
and `check_descriptors` fails the target's case at its start once the table is near its limit,
naming the limit; conform then has the reserve for its own files and reports.

A target that leaves a thread running (one that spins, or waits for ever) would keep Python from
exiting once the command is done: `leftover_threads` names such threads, and the command exits
without waiting for them (`exit_now`).
"""

from __future__ import annotations

import errno
import os
import resource
import sys
import threading
from types import TracebackType

from harness.errors import TargetCrash

#: How the message of a target that used up the descriptors begins (a partial report says so).
LIMIT_REACHED = "too many open files:"
#: Descriptors conform keeps for itself while a target runs in its process.
RESERVE = 16
#: A case is not started while fewer descriptors than this are free.
HEADROOM = 64

_active: DescriptorGuard | None = None


def _lowest_free() -> int | None:
    """The lowest free descriptor number (what the next `open` would get); None when none is
    free."""
    try:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return None
        raise
    os.close(fd)
    return fd


def _open_count() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor
    except OSError:
        return None


class DescriptorGuard:
    """While entered: `RESERVE` descriptors kept for conform, and `check_descriptors` active."""

    def __init__(self) -> None:
        self.limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._reserve: list[int] = []
        self.tripped: str | None = None

    def __enter__(self) -> DescriptorGuard:
        global _active
        for _ in range(RESERVE):
            try:
                self._reserve.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                break
        _active = self
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        global _active
        _active = None
        self.release()

    def release(self) -> None:
        """Give the reserve back: conform needs it now (its reports)."""
        reserve, self._reserve = self._reserve, []
        for fd in reserve:
            os.close(fd)

    def message(self) -> str:
        """What the target did, with the limit named."""
        count = _open_count()
        held = f"{count:,} descriptors are open" if count is not None else "descriptors are open"
        limit = "no limit" if self.limit == resource.RLIM_INFINITY else f"{self.limit:,}"
        return (
            f"{LIMIT_REACHED} {held} in conform's process, near its limit ({limit}, "
            "ulimit -n): the target opens descriptors it never closes; conform keeps the last "
            f"{HEADROOM} for itself and starts no more cases of it"
        )

    def exhausted(self) -> bool:
        """True when the target has taken every descriptor (an error of conform's own, such as a
        recording it could not open, is then the target's doing)."""
        return _lowest_free() is None

    def check(self) -> None:
        if self.tripped is not None:
            raise TargetCrash(self.tripped)
        free = _lowest_free()
        if self.limit == resource.RLIM_INFINITY:
            return
        if free is None:
            # Every descriptor is taken: conform cannot open a file of its own (a recording, a
            # golden file, a report), and the run stops as when one of those fails to open
            # (harness.pipeline.run), whether or not this case needed to open one first.
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        if free < self.limit - HEADROOM:
            return
        self.tripped = self.message()
        self.release()
        raise TargetCrash(self.tripped)


def check_descriptors() -> None:
    """TargetCrash, naming the limit, when an in-process run's descriptors are near their limit
    (before a case starts); nothing outside such a run."""
    if _active is not None:
        _active.check()


def active_guard() -> DescriptorGuard | None:
    """The guard of the in-process run under way, if any."""
    return _active


def leftover_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """The threads that run now, were not running `before`, and would keep Python from exiting
    (not daemons)."""
    return [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.daemon and t is not threading.main_thread()
    ]


def exit_now(code: int) -> None:
    """End the process with `code` at once, without waiting for the threads a target left: what
    Python's exit would do first (its `atexit` handlers, flushing stdout and stderr) done here."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
