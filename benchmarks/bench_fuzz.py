"""What one fuzzed stream costs, against two runs of a shipped case in `conform run`, side by side.

Both sides in this process, CPU time, the reference as the target, in-process, the garbage
collector off while a contender runs, interleaved repeat by repeat (the median of the repeats):

- `fuzzed stream`: `conform fuzz reference:Assembler --in-process --seed 1 --examples N`'s
  search (`harness.fuzz.loop.Search`), per stream: the guide's plan, the stream drawn, its
  expected result worked out by the reference, its run in `plain` and in one other mode, the
  compare (one stream in `TRACE_EVERY` with the reference's lines traced, as a run does);
- `two runs of a shipped case`: `conform run reference:Assembler --in-process` over the shipped
  suite (`harness.check.parallel.run`), once in `plain` and once in each other mode: the CPU of a
  case in `plain` plus the mean of a case in one other mode, what a fuzzed stream runs.

The goal (issue 35): a fuzzed stream costs at most 2x two runs of a shipped case. Then where a
fuzzed stream's time goes (each part alone over the same streams), the throughput in streams per
CPU-second in-process and through a worker process (the worker's CPU counted), and the wall-clock
rate at `-j 1` and `-j 2` on this machine.

Run: `python benchmarks/bench_fuzz.py` (`--check` exits 1 when the goal is missed; `--quick`
takes fewer streams and repeats).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import reference  # noqa: E402
from harness.check import parallel  # noqa: E402
from harness.check.modes import MODES, PLAIN  # noqa: E402
from harness.check.options import RunOptions  # noqa: E402
from harness.check.runner import run_case  # noqa: E402
from harness.drive.inprocess import InProcessDriver  # noqa: E402
from harness.fuzz.check import case_of  # noqa: E402
from harness.fuzz.guide import Guide, LineCoverage  # noqa: E402
from harness.fuzz.loop import CASE_ID, FuzzRequest, run_fuzz  # noqa: E402
from harness.fuzz.model.breakers import BREAKERS  # noqa: E402
from harness.fuzz.model.draw import Draw  # noqa: E402
from harness.fuzz.model.expect import expected  # noqa: E402
from harness.fuzz.model.streams import build  # noqa: E402
from harness.fuzz.search import Search  # noqa: E402
from harness.suite.cases import Suite  # noqa: E402

SEED = 1
GOAL = 2.0
#: How both sides judge: the default options on this seed (no target: our own driver).
OPTIONS = RunOptions(seed=SEED)


def cpu() -> float:
    return time.process_time()


def timed(action: Callable[[], Any], clock: Callable[[], float] = cpu) -> float:
    gc.collect()
    gc.disable()
    try:
        started = clock()
        action()
        return clock() - started
    finally:
        gc.enable()


def medians(contenders: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, action in contenders.items():
            times[name].append(timed(action))
    return {name: statistics.median(found) for name, found in times.items()}


def search(streams: int) -> None:
    options = RunOptions(target="reference:Assembler", in_process=True, seed=SEED)
    found = Search(FuzzRequest(options, examples=streams, shrink_steps=0), 0)
    found.run()
    if found.finding is not None:
        raise SystemExit("the reference differs from itself: not a benchmark")


def shipped(modes: list[str]) -> Callable[[], None]:
    cases = Suite.open(ROOT).cases()

    def run() -> None:
        driver = InProcessDriver(reference.Assembler)
        for result in parallel.run(cases, driver, modes=modes, options=OPTIONS):
            if result.status != "passed":
                raise SystemExit(f"the reference fails {result.case_id}: not a benchmark")

    return run


def breakdown(streams: int, repeats: int) -> None:
    """Each part of a fuzzed stream alone, over the first `streams` streams of the seed."""
    guide = Guide(SEED, modes=MODES, broken=None)
    plans = []
    for number in range(streams):
        plan = guide.plan(number)
        made = build(Draw(plan.seed, plan.wanted), BREAKERS.get(plan.breaker or ""))
        guide.note(plan, made.features)
        plans.append(plan)
    drawn = [build(Draw(p.seed, p.wanted), BREAKERS.get(p.breaker or "")) for p in plans]
    records = [s.payload_records() for s in drawn]
    name = f"{CASE_ID}.sse"
    goldens = [expected(r, s.thinking_capped, name) for s, r in zip(drawn, records, strict=True)]
    driver = InProcessDriver(reference.Assembler)

    def plan_only() -> None:
        again = Guide(SEED, modes=MODES, broken=None)
        for number, stream in enumerate(drawn):
            again.note(again.plan(number), stream.features)

    def generate() -> None:
        for plan in plans:
            build(Draw(plan.seed, plan.wanted), BREAKERS.get(plan.breaker or ""))

    def lines() -> None:
        for stream in drawn:
            stream.payload_records()

    def expect() -> None:
        for stream, found in zip(drawn, records, strict=True):
            expected(found, stream.thinking_capped, f"{CASE_ID}.sse")

    def traced() -> None:
        coverage = LineCoverage()
        for stream, found in zip(drawn, records, strict=True):
            coverage.run(lambda s=stream, f=found: expected(f, s.thinking_capped, "x.sse"))

    def mode_runs(index: int) -> Callable[[], None]:
        def run() -> None:
            for plan, found, golden in zip(plans, records, goldens, strict=True):
                mode = plan.modes[index] if index < len(plan.modes) else PLAIN
                run_case(case_of(CASE_ID, found), golden, driver, mode=mode, options=OPTIONS)

        return run

    got = medians(
        {
            "the guide's plans": plan_only,
            "drawing the streams": generate,
            "their payloads and lines": lines,
            "expected results": expect,
            "expected results, traced": traced,
            "plain": mode_runs(0),
            "the other mode": mode_runs(1),
        },
        repeats,
    )
    print(f"\nwhere a fuzzed stream's time goes ({streams} streams, median of {repeats}, CPU)")
    for name, seconds in got.items():
        print(f"  {name:<28} {seconds / streams * 1e6:8.1f} µs")
    size = sum(len(s.payloads) for s in drawn) / streams
    chars = sum(sum(map(len, s.payloads)) for s in drawn) / streams
    print(f"  ({size:.1f} payloads, {chars:.0f} characters a stream on average)")


def throughput(seconds: float) -> None:
    """Streams per CPU-second in-process and through a worker, and the wall rate at -j 1, 2."""
    print(f"\nthroughput, {seconds:g} s each, the reference as target")
    for label, in_process, jobs in (
        ("in-process, -j 1", True, 1),
        ("a worker process, -j 1", False, 1),
        ("in-process, -j 2", True, 2),
    ):
        options = RunOptions(target="reference:Assembler", in_process=in_process, seed=SEED)
        mine = resource.getrusage(resource.RUSAGE_SELF)
        theirs = resource.getrusage(resource.RUSAGE_CHILDREN)
        record = run_fuzz(FuzzRequest(options, seconds=seconds, jobs=jobs))
        used = _cpu_since(mine, theirs)
        print(
            f"  {label:<24} {record.streams / used:7.0f} streams per CPU-second, "
            f"{record.streams / record.seconds:7.0f} streams/s wall ({record.streams} streams)"
        )


def _cpu_since(mine: Any, theirs: Any) -> float:
    now_mine = resource.getrusage(resource.RUSAGE_SELF)
    now_theirs = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        now_mine.ru_utime
        + now_mine.ru_stime
        - mine.ru_utime
        - mine.ru_stime
        + now_theirs.ru_utime
        + now_theirs.ru_stime
        - theirs.ru_utime
        - theirs.ru_stime
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000, help="fuzzed streams a repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="500 streams, 3 repeats, 3 s rates")
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {GOAL}x")
    parser.add_argument("--no-detail", action="store_true", help="the goal's figure only")
    args = parser.parse_args()
    streams, repeats, rate_time = args.streams, args.repeats, 10.0
    if args.quick:
        streams, repeats, rate_time = 500, 3, 3.0
    others = [mode for mode in MODES if mode != PLAIN]
    cases = len(Suite.open(ROOT).cases())
    got = medians(
        {
            "fuzz": lambda: search(streams),
            "plain": shipped([PLAIN]),
            "others": shipped(others),
        },
        repeats,
    )
    stream = got["fuzz"] / streams
    two = got["plain"] / cases + got["others"] / (cases * len(others))
    ratio = stream / two
    print(f"median of {repeats}, CPU, in-process, the reference as target")
    print(f"  one fuzzed stream ({streams} streams)        {stream * 1e3:7.3f} ms")
    print(
        f"  two runs of a shipped case (plain + another) {two * 1e3:7.3f} ms"
        f"   ({cases} cases: plain {got['plain'] / cases * 1e3:.3f} ms, "
        f"another mode {got['others'] / (cases * len(others)) * 1e3:.3f} ms)"
    )
    print(f"  ratio {ratio:.2f}x (goal: at most {GOAL:g}x)  {'ok' if ratio <= GOAL else 'MISSED'}")
    if not args.no_detail:
        breakdown(min(streams, 1000), repeats)
        throughput(rate_time)
    return 1 if args.check and ratio > GOAL else 0


if __name__ == "__main__":
    raise SystemExit(main())
