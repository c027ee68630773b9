"""Every program a run starts, and stopping them all: process groups, marks, a subreaper.

Each program starts in a session and process group of its own (`harness.drive.pipes.Worker`);
everything it starts stays in that group unless it leaves on purpose. The group is killed
whenever the program stops (after a case it broke, at the end of the run) and, through
`stop_all_programs`, on Ctrl-C, on SIGTERM, on SIGHUP and at interpreter exit.

What leaves on purpose (a double fork and `setsid`: a daemon) is found all the same: every program
gets `CONFORM_RUN=<run>.<driver>` in its environment (`MARK`), which whatever it starts inherits,
and on Linux this process becomes a child subreaper (`become_subreaper`), so orphans of its
programs are re-parented to it rather than to init. When a program stops, every process still
marked with its driver's value is killed (and reaped when it is our child); `stop_all_programs`
kills every process marked with this run. So no process a run started outlives it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import secrets
import signal
import sys
import threading

from harness.errors import TargetError

MARK = "CONFORM_RUN"  # the environment variable that marks every process a run started
_RUN = f"{os.getpid()}-{secrets.token_hex(6)}"
_FAMILIES = itertools.count(1)
_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 5  # scans for marked processes at one stop: each kills what forked during the last


class _ProcessGroups:
    """The process groups of every program this process started and has not yet killed.

    `kill_all` kills them all and, with `close`, makes any later start fail at once: once a run
    is being stopped, a worker thread must not start a program that nothing would kill. It runs
    at exit too, from the first program started on (importing this module registers nothing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._closed = False
        self._at_exit = False

    def __contains__(self, pgid: int) -> bool:
        return pgid in self._groups

    def add(self, pgid: int) -> None:
        with self._lock:
            if not self._at_exit:
                atexit.register(self.kill_all, close=True)
                self._at_exit = True
            self._groups.add(pgid)
            if not self._closed:
                return
        kill_group(pgid)
        raise TargetError("the run is being stopped: no program is started any more")

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def kill_all(self, *, close: bool = False) -> int:
        """Kill every group still registered (they stay registered until reaped); how many."""
        with self._lock:
            self._closed = self._closed or close
            groups = list(self._groups)
        for pgid in groups:
            kill_group(pgid)
        kill_marked(_RUN + ".")
        return len(groups)

    def reopen(self) -> None:
        """Allow starts again (a later run in the same process, as tests make)."""
        with self._lock:
            self._closed = False

    def forget(self) -> None:
        """Start empty: in a forked child, the parent's programs are not this process's."""
        self._lock = threading.Lock()
        self._groups = set()
        self._closed = False


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


GROUPS = _ProcessGroups()


def a_run_of_its_own() -> None:
    """In a process forked from conform (`conform fuzz -j N`'s searches): mark the programs it
    starts as a run of its own, so that stopping them never stops its parent's or its siblings'
    (whose marks start like ours), and forget the parent's programs."""
    global _RUN, _FAMILIES
    _RUN = f"{os.getpid()}-{secrets.token_hex(6)}"
    _FAMILIES = itertools.count(1)
    GROUPS.forget()


def new_family() -> str:
    """A value of `CONFORM_RUN` for one driver's programs (and all they start)."""
    return f"{_RUN}.{next(_FAMILIES)}"


def _marked(needle: bytes) -> list[int]:
    """The processes (not this one) whose environment has an entry starting with `needle`."""
    try:
        names = os.listdir("/proc")
    except OSError:  # not Linux: process groups are all there is
        return []
    me = os.getpid()
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as file:
                environ = file.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ and (environ.startswith(needle) or b"\0" + needle in environ):
            found.append(int(name))
    return found


def kill_marked(value: str) -> int:
    """Kill every process whose `CONFORM_RUN` starts with `value` (a family ends with "\0": exact),
    wherever it went (another group, another session, another parent); how many were killed."""
    needle = f"{MARK}={value}".encode()
    killed = 0
    for _ in range(_ROUNDS):
        pids = _marked(needle)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        for pid in pids:
            if pid not in GROUPS:  # a program's own pid is reaped by its Popen
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)  # an orphan re-parented to this subreaper
    return killed


def become_subreaper() -> None:
    """On Linux, adopt the orphans of our programs' descendants (see the module docstring)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stop_all_programs() -> int:
    """Kill every program this process started (and all they started, even what left their
    process group and session), now, from any thread or a signal handler; later starts fail.
    Call it on SIGINT, SIGTERM and SIGHUP alike. Returns how many groups were killed."""
    return GROUPS.kill_all(close=True)


def allow_programs() -> None:
    """Undo `stop_all_programs`' refusal of new programs (for the next run in this process)."""
    GROUPS.reopen()
