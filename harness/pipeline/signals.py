"""Stopping a run cleanly on Ctrl-C, SIGTERM or SIGHUP, whatever the target is doing.

A signal sets `cancel` (no further case or mode starts) and kills every program the run started,
so the calls under way return at once; the run then writes the reports of the runs that finished
and exits 128 + the signal's number. A second signal changes nothing: there is nothing left to
wait for. In-process, where nothing can be killed, the first signal raises KeyboardInterrupt in
the target, which the run takes the same way. Outside the main thread (a library caller's
thread), no handler is installed and only `cancel` stops the run.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from harness.drive.process import stop_all_programs

#: The signals a run stops on; SIGHUP (a closed terminal, a CI runner going away) like SIGTERM.
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NAMES: dict[int, str] = {
    signal.SIGINT: "Ctrl-C",
    signal.SIGTERM: "SIGTERM",
    signal.SIGHUP: "SIGHUP",
}


class Interruption:
    """The signal handling of one run; usable without entering it (then only `cancel` stops)."""

    def __init__(self, *, in_process: bool = False) -> None:
        self.cancel = threading.Event()
        self.signum: int | None = None
        self._in_process = in_process
        self._raising = True
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Interruption:
        if threading.current_thread() is threading.main_thread():
            for signum in HANDLED:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, handler in self._previous.items():
            # Exiting 128+N now: a further signal must not turn that into death by it (Python
            # puts back the default handler while it shuts down, but keeps "ignore").
            signal.signal(signum, signal.SIG_IGN if self.cancel.is_set() else handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted(signum)
        if self._raising and self._in_process:
            self._raising = False  # once: a second signal must not land in the clean-up
            raise KeyboardInterrupt

    def interrupted(self, signum: int = signal.SIGINT) -> None:
        """Stop the run: no new case, no program left running."""
        if self.signum is None:
            self.signum = signum
        self.cancel.set()
        stop_all_programs()

    def stop_raising(self) -> None:
        """From here on (writing reports) a signal only kills programs, as a first one did."""
        self._raising = False

    @property
    def stopped(self) -> bool:
        """True once the run was asked to stop."""
        return self.cancel.is_set()

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        return _NAMES.get(self.signum or signal.SIGINT, f"signal {self.signum}")
