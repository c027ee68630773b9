"""Click parameter types shared by conform's commands (a front door's module, like `cli.py`).

`Seconds` is the one type of every timeout option: a finite, positive number of seconds no larger
than `MAX_SECONDS`, so that `inf`, `nan`, `1e300` or `0` are one usage error (exit 2) instead of a
timer that overflows or never fires.
"""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["MAX_SECONDS", "Seconds"]

#: The longest timeout accepted: 30 days, far below what timers and `time.monotonic()` sums hold.
MAX_SECONDS = 30 * 24 * 3600.0


class Seconds(click.ParamType[float]):
    """A timeout in seconds: a finite number above 0 and at most `MAX_SECONDS`."""

    name = "SECONDS"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float | int) and not isinstance(value, bool):
            seconds = float(value)
        else:
            try:
                seconds = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds (e.g. 30 or 2.5)", param, ctx)
        if math.isnan(seconds) or math.isinf(seconds):
            self.fail(f"{value!r} is not a finite number of seconds (e.g. 30 or 2.5)", param, ctx)
        if seconds <= 0:
            self.fail(f"{value!r} is not above 0 seconds (e.g. 30 or 2.5)", param, ctx)
        if seconds > MAX_SECONDS:
            self.fail(
                f"{value!r} is more than {MAX_SECONDS:.0f} seconds (30 days); give less",
                param,
                ctx,
            )
        return seconds
