"""Time limits: the one rule for every timeout (`check_seconds`) and its click type (`Seconds`, of
`run`, `matrix`, `fuzz`, `record` and the plugin's `--conform-timeout`). (The default time allowed
for one call into a target is `harness.drive.base.DEFAULT_TIMEOUT`: the worker imports that module,
and must not import click.)

It lives in the base stage so that every command can use it, `conform record` in `capture/` too,
and the settings of a run (`harness.check.options.RunOptions`) check a timeout given from Python
by the same rule; `harness.cli.options` re-exports the type. A timeout is a finite number of
seconds above 0 and at most `MAX_SECONDS`: `inf`, `nan`, `1e300`, `0` or `abc` are one usage error
(exit 2) instead of a timer that overflows or never fires.
"""

from __future__ import annotations

import math
from typing import Any

import click

from harness.errors import ConformError

__all__ = ["MAX_SECONDS", "Seconds", "check_seconds"]

#: The longest time limit accepted, in seconds (a day): beyond, a "limit" is no limit.
MAX_SECONDS = 86_400.0


def _problem(value: Any) -> tuple[float, str | None]:
    """`value` as seconds, and what is wrong with it as a time limit (None: nothing)."""
    if isinstance(value, bool):
        return 0.0, f"{value!r} is not a number of seconds (e.g. 30 or 2.5)"
    try:
        seconds = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return 0.0, f"{value!r} is not a number of seconds (e.g. 30 or 2.5)"
    if math.isnan(seconds) or math.isinf(seconds):
        return seconds, f"{value!r} is not a finite number of seconds (e.g. 30 or 2.5)"
    if seconds <= 0:
        return seconds, f"{value!r} is not above 0 seconds (e.g. 30 or 2.5)"
    if seconds > MAX_SECONDS:
        return seconds, f"{value!r} is more than {MAX_SECONDS:.0f} seconds (a day); give less"
    return seconds, None


def check_seconds(value: Any, *, option: str = "--timeout") -> float:
    """`value` as a time limit in seconds; ConformError naming `option` when it is not one."""
    seconds, problem = _problem(value)
    if problem is not None:
        raise ConformError(f"{option}: {problem}", hint="for example --timeout 30")
    return seconds


class Seconds(click.ParamType[float]):
    """A time limit in seconds: a finite number above 0, at most a day (`check_seconds`)."""

    name = "SECONDS"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        seconds, problem = _problem(value)
        if problem is not None:
            self.fail(problem, param, ctx)
        return seconds
