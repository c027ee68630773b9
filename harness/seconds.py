"""`Seconds`, the one click type of every timeout option (`run`, `matrix`, `record`, the plugin).

It lives in the base stage so that every command can use it, `conform record` in `capture/` too;
`harness.cli.options` re-exports it. A timeout is a finite number of seconds above 0 and at most
`MAX_SECONDS`: `inf`, `nan`, `1e300`, `0` or `abc` are one usage error (exit 2) instead of a timer
that overflows or never fires.
"""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["MAX_SECONDS", "Seconds"]

#: The longest time limit accepted, in seconds (a day): beyond, a "limit" is no limit.
MAX_SECONDS = 86_400.0


class Seconds(click.ParamType[float]):
    """A time limit in seconds: a finite number above 0, at most a day."""

    name = "SECONDS"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a number of seconds (e.g. 30 or 2.5)", param, ctx)
        try:
            seconds = float(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds (e.g. 30 or 2.5)", param, ctx)
        if math.isnan(seconds) or math.isinf(seconds):
            self.fail(f"{value!r} is not a finite number of seconds (e.g. 30 or 2.5)", param, ctx)
        if seconds <= 0:
            self.fail(f"{value!r} is not above 0 seconds (e.g. 30 or 2.5)", param, ctx)
        if seconds > MAX_SECONDS:
            self.fail(
                f"{value!r} is more than {MAX_SECONDS:.0f} seconds (a day); give less", param, ctx
            )
        return seconds
