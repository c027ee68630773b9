"""Running one case in one mode at a time, for a front door that asks case by case: the pytest
plugin (a test per case and mode) and `conform fuzz` (a generated stream at a time).

`CaseRunner` holds what `run_target` holds for a whole plan: the run's settings (`RunOptions`),
one driver of the target (started on first use, inside the run's fork servers, and never started
again once it could not start: the error is raised for every case instead), and the runner that
judges a case (`harness.check.runner.run_case`). So a case run this way is judged exactly as
`conform run` judges it.

    with CaseRunner(options) as runner:
        result = runner.run(case, golden, mode="plain")
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from harness.check.options import RunOptions
from harness.check.results import CaseResult
from harness.check.runner import run_case
from harness.drive import forked
from harness.drive.base import Driver
from harness.errors import ConformError
from harness.suite.cases import Case


class CaseRunner:
    """The target of `options`, run one case in one mode at a time (see the module)."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self._driver: Driver | None = None
        self._broken: str | None = None  # why the driver could not start: not tried again
        self._workers = ExitStack()  # while open, a Python target's workers fork (drive/forked.py)

    def driver(self) -> Driver:
        """The target's driver, started on first use (ConformError when it cannot start)."""
        if self._broken is not None:
            raise ConformError(self._broken)
        if self._driver is None:
            # The one driver of the runner (never made again): its target imported once, a
            # restart after a crash forks a worker.
            self._workers.enter_context(forked.forked_workers())
            try:
                self._driver = self.options.start_driver()
            except ConformError as exc:
                self._broken = str(exc)
                raise
        return self._driver

    def run(self, case: Case, golden: dict[str, Any], *, mode: str) -> CaseResult:
        """`case` in `mode`, against its golden document `golden` (in memory), judged as the
        options say; ConformError when the target cannot start or the golden file is stale."""
        return run_case(case, golden, self.driver(), mode=mode, options=self.options)

    def close(self) -> None:
        """Stop the target (and the fork servers the runner started)."""
        driver, self._driver = self._driver, None
        try:
            if driver is not None:
                driver.close()
        finally:
            self._workers.close()

    def __enter__(self) -> CaseRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
