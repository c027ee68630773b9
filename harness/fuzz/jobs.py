"""`conform fuzz -j N`: N searches in N processes, so that the search scales with the cores.

Each search process is forked from conform (a process of its own, not a thread: generating
streams, working out their expected results and comparing are Python work that one interpreter
does on one core at a time). Search K runs with seed + K and its own driver, exactly as `conform
fuzz --seed <seed + K>` would, and sends back what it did; the first finding stops the others.
Progress comes through a shared array of stream counts. A setup error in any search (a target
that cannot start) stops them all and is raised here. Ctrl-C reaches every search (they share
conform's process group; a signal sent to conform alone is passed on): each ends as one search
does, a finding keeping its smallest stream so far, and the run waits for them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from harness.errors import ConformError
from harness.fuzz.guide import Coverage
from harness.fuzz.request import FuzzRecord, FuzzRequest
from harness.fuzz.search import Search, SearchOutcome, cpu_seconds, record_of

#: Seconds between two coverage reports of a search process (for the progress line).
_REPORT_EVERY = 0.5
#: Seconds a search process has, after the run is over, to send what it did.
_WAIT = 30.0


def _context() -> Any:
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def _search(request: FuzzRequest, number: int, stop: Any, sent: Any, counts: Any) -> None:
    """One search process: its search, its progress, and what it did at the end."""
    from harness.drive.forked import forked_workers
    from harness.drive.programs import a_run_of_its_own

    a_run_of_its_own()
    last = [0.0]

    def on_stream(search: Search) -> None:
        counts[number] = search.streams
        now = time.monotonic()
        if now - last[0] > _REPORT_EVERY:
            last[0] = now
            sent.put(("coverage", number, search.guide.coverage()))

    search = Search(request, number, stopped=stop.is_set, on_stream=on_stream)
    try:
        with forked_workers():
            search.run()
    except ConformError as exc:
        sent.put(("error", number, (exc.message, exc.hint)))
        return
    except Exception:  # a bug in conform: raised again in conform's own process
        sent.put(("bug", number, traceback.format_exc()))
        return
    except KeyboardInterrupt:
        search.interrupted = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what it did is sent, whatever comes now
    if search.finding is not None:
        stop.set()
    sent.put(("done", number, search.outcome()))


def run_searches(
    request: FuzzRequest, *, on_stream: Callable[[int, Callable[[], str]], None] | None = None
) -> FuzzRecord:
    """Run `request.searches` searches in processes of their own; their record."""
    started = time.monotonic()
    cpu = cpu_seconds()
    context = _context()
    count = request.searches
    stop = context.Event()
    sent = context.Queue()
    counts = context.Array("q", count, lock=False)
    processes = [
        context.Process(target=_search, args=(request, number, stop, sent, counts), daemon=True)
        for number in range(count)
    ]
    for process in processes:
        process.start()
    outcomes: dict[int, SearchOutcome] = {}
    coverage: dict[int, Coverage] = {}
    interrupted = False
    error: tuple[str, str | None] | None = None
    deadline: float | None = None
    try:
        while len(outcomes) < count and error is None:
            try:
                kind, number, value = sent.get(timeout=0.1)
            except queue.Empty:
                if all(not p.is_alive() for p in processes) or (
                    deadline is not None and time.monotonic() > deadline
                ):
                    break  # a search died without a word (killed): the others' record stands
                if on_stream is not None:
                    on_stream(sum(counts), lambda: _summary(coverage))
                continue
            except KeyboardInterrupt:
                interrupted = True
                stop.set()
                deadline = time.monotonic() + _WAIT
                for process in processes:
                    with contextlib.suppress(ProcessLookupError):
                        if process.pid is not None and process.is_alive():
                            os.kill(process.pid, signal.SIGINT)
                continue
            if kind == "bug":
                stop.set()
                raise RuntimeError(f"a search process failed:\n{value}")
            if kind == "coverage":
                coverage[number] = value
            elif kind == "done":
                outcomes[number] = value
                coverage[number] = value.coverage
            else:
                error = value
                stop.set()
    finally:
        stop.set()
        for process in processes:
            process.join(timeout=_WAIT if error is None else 1.0)
            if process.is_alive():
                process.kill()
                process.join()
    if error is not None:
        raise ConformError(error[0], hint=error[1])
    ordered = [outcomes[n] for n in sorted(outcomes)]
    return record_of(ordered, started=started, cpu=cpu, seed=request.seed, interrupted=interrupted)


def _summary(coverage: dict[int, Coverage]) -> str:
    total = Coverage()
    for found in coverage.values():
        total |= found
    return total.summary()
