"""Fuzzing a target: `run_fuzz(request)` runs the searches of a `conform fuzz` run.

One search (`harness.fuzz.search.Search`) runs here; with `-j N`, N searches run in processes of
their own (`harness.fuzz.jobs`). Each draws streams from the model of llama-server streams on
its own seed, checks them against the target with the runner `conform run` uses, and settles
the first difference (checked again, shrunk, checked as it is kept). The result is a
`FuzzRecord`, which `conform fuzz` renders like a run failure and can save as a case
(`harness.fuzz.save`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.drive.forked import forked_workers
from harness.fuzz.jobs import run_searches
from harness.fuzz.request import CASE_ID, Finding, FuzzRecord, FuzzRequest
from harness.fuzz.search import Search, cpu_seconds, record_of

#: What a progress line is told after each stream: the streams so far, and a way to the coverage.
Progress = Callable[[int, Callable[[], str]], None]

__all__ = ["CASE_ID", "Finding", "FuzzRecord", "FuzzRequest", "Progress", "run_fuzz"]


def run_fuzz(request: FuzzRequest, *, on_stream: Progress | None = None) -> FuzzRecord:
    """Fuzz the target until a difference is found or the budget is spent; `on_stream(n,
    coverage)` is called after each stream, `coverage()` saying how much of the catalogue the
    run exercised (for a progress line). ConformError when the target cannot start."""
    if request.searches > 1:
        return run_searches(request, on_stream=on_stream)
    started = time.monotonic()
    cpu = cpu_seconds()

    def progress(search: Search) -> None:
        if on_stream is not None:
            on_stream(search.streams, search.guide.summary)

    search = Search(request, 0, on_stream=progress)
    with forked_workers():  # a Python target imported once: each restart after a crash forks
        search.run()
    return record_of([search.outcome()], started=started, cpu=cpu, seed=request.seed)
