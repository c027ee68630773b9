"""What a person sees while a run goes on: a progress bar on stderr and coloured status words.

The bar is drawn only on a terminal, at most a few times a second, and is erased when the run
ends, so what is printed after it starts on a clean line. Colour follows the NO_COLOR convention
(https://no-color.org): off when `NO_COLOR` is set to anything but the empty string, and off when
the output is not a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from types import TracebackType
from typing import TextIO

import click

from harness.check.results import CRASHED, FAILED, PASSED, TIMED_OUT, XFAILED, XPASSED, CaseResult
from harness.check.status import Status
from harness.reports.text import label

_COLOURS = {
    PASSED: "green",
    FAILED: "red",
    CRASHED: "magenta",
    TIMED_OUT: "yellow",
    XFAILED: "cyan",
    XPASSED: "red",
}
_LABELS = {label(status): status for status in _COLOURS}
_REDRAW_SECONDS = 0.1


def wants_colour(stream: TextIO) -> bool:
    """True when `stream` is a terminal and NO_COLOR does not forbid colour."""
    return not os.environ.get("NO_COLOR") and _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint_status(status: str, *, colour: bool) -> str:
    """The status word (`FAIL`) in its colour, or plain."""
    word = label(status)
    if not colour:
        return word
    return click.style(
        word, fg=_COLOURS.get(Status(status)), bold=status in (FAILED, CRASHED, XPASSED)
    )


def paint_line(line: str, *, colour: bool) -> str:
    """A report line whose first word is a status word, with that word coloured."""
    if not colour:
        return line
    word, space, rest = line.partition(" ")
    status = _LABELS.get(word)
    return line if status is None else paint_status(status, colour=True) + space + rest


class ProgressBar:
    """`[#####-----]  120/282  llama-server/tool_call [plain]` on stderr, redrawn in place."""

    def __init__(self, total: int, *, stream: TextIO, enabled: bool, colour: bool) -> None:
        self.total = total
        self.done = 0
        self.problems = 0
        self._stream = stream
        self._enabled = enabled and total > 0
        self._colour = colour
        #: Whether the run's report lines on stdout may be coloured.
        self.colour = colour
        self._drawn_at = 0.0
        self._drawn = False

    @classmethod
    def for_terminal(cls, total: int, *, quiet: bool = False) -> ProgressBar:
        """A bar on stderr, drawn only when stderr is a terminal and the run is not quiet; its
        `colour` says whether stdout takes colour."""
        bar = cls(
            total,
            stream=sys.stderr,
            enabled=not quiet and _isatty(sys.stderr),
            colour=wants_colour(sys.stderr),
        )
        bar.colour = wants_colour(sys.stdout)
        return bar

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def advance(self, result: CaseResult) -> None:
        """Count one result; redraw when the last drawing is old enough (or this is the last)."""
        self.done += 1
        if result.status not in (PASSED, XFAILED):
            self.problems += 1
        if not self._enabled:
            return
        now = time.monotonic()
        if now - self._drawn_at >= _REDRAW_SECONDS or self.done == self.total:
            self._drawn_at = now
            self._draw(f"{result.case_id} [{result.mode}]")

    def render(self, current: str, width: int) -> str:
        """The bar's line for `width` columns, without colour."""
        counter = f" {self.done}/{self.total}"
        if self.problems:
            counter += f", {self.problems} not passing"
        bar_width = max(10, min(40, width // 3))
        filled = bar_width * self.done // self.total if self.total else bar_width
        line = f"[{'#' * filled}{'-' * (bar_width - filled)}]{counter}  {current}"
        return line[: max(width - 1, 1)]

    def _draw(self, current: str) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        line = self.render(current, width)
        if self._colour and self.problems:
            line = line.replace("not passing", click.style("not passing", fg="red"), 1)
        self._stream.write("\r" + line + "\033[K")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar, leaving the cursor at the start of an empty line."""
        if self._drawn:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._drawn = False
