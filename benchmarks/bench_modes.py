"""The input modes' cost per payload, now and before they were made faster, side by side.

Every payload of the shipped suite (`recordings/`) is changed by each mode that changes payloads,
with the harness's `mutator` (now) and with the frozen copy of the old code that
`tests/check/test_mutation_oracle.py` compares it with (`tests/check/oracle_modes.py`, before),
interleaved repeat by repeat with the garbage collector off; each figure is the median, in µs per
payload, of CPU time (user and system of this process) or, with `--wall`, of the wall clock. The
payloads up to 10 KB are shown apart (the suite's few large ones weigh on the whole: one is 1 MiB),
and so is what a fresh generator costs, which every changed payload pays once (the modes' floor).
`--suite` also times the whole suite in every mode in-process, with each version's modes.

Run: `python benchmarks/bench_modes.py` (`--help` for the options; `--check` exits 1 when a mode
is less than `--goal` times faster).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.check import jsontext, modes  # noqa: E402
from harness.suite.cases import Suite  # noqa: E402
from harness.suite.recording import iter_payloads  # noqa: E402
from tests.check import oracle_modes  # noqa: E402

SEED = modes.DEFAULT_SEED
#: Payloads up to this many characters are the "small" ones.
SMALL = 10_000

#: The modes that change payloads (plain and truncated push them as recorded).
SEEDED = tuple(m for m in modes.MODES if modes.mutator(m, seed=0, case_id="c") is not None)

Payload = tuple[str, int, str]  # case id, step, text
Factory = Callable[..., Callable[[int, str], str] | None]


def payloads() -> list[Payload]:
    found = []
    for case in Suite.open(ROOT).cases():
        for step, payload in enumerate(iter_payloads(case.recording)):
            found.append((case.case_id, step, payload.data))
    return found


def changing(chosen: Sequence[Payload], factory: Factory, mode: str) -> Callable[[], object]:
    """Changes every payload of `chosen` in `mode`, a mutator per case as the runner makes them."""
    by_case: dict[str, list[tuple[int, str]]] = {}
    for case_id, step, data in chosen:
        by_case.setdefault(case_id, []).append((step, data))

    def run() -> object:
        for kept in jsontext._RUNS:  # each repeat starts as a run does, with no run escaped yet
            kept.clear()
        for case_id, pairs in by_case.items():
            change = factory(mode, seed=SEED, case_id=case_id)
            assert change is not None
            for step, data in pairs:
                change(step, data)
        return None

    return run


def seeding(chosen: Sequence[Payload]) -> Callable[[], object]:
    def run() -> object:
        for case_id, step, _ in chosen:
            random.Random(f"{SEED}:{case_id}:{step}").getrandbits(1)
        return None

    return run


def whole_run(mutator: Factory) -> Callable[[], object]:
    """The whole shipped suite in every mode, in-process with the reference (as `conform run
    reference:Assembler --in-process` runs it), with `mutator` making the changed payloads."""
    import reference
    from harness.check import parallel
    from harness.drive.inprocess import InProcessDriver

    cases = Suite.open(ROOT).cases()

    def run() -> object:
        made = modes._mutator
        modes._mutator = mutator  # type: ignore[assignment]
        try:
            driver = InProcessDriver(reference.Assembler)
            results = list(parallel.run(cases, driver, modes=modes.MODES, seed=SEED))
        finally:
            modes._mutator = made  # type: ignore[assignment]
        failed = [r for r in results if r.status.name != "PASSED"]
        assert not failed, f"the reference failed {failed[0].case_id}: not a benchmark"
        return None

    return run


def clock(wall: bool) -> Callable[[], float]:
    return time.perf_counter if wall else time.process_time


def timed(action: Callable[[], object], now: Callable[[], float]) -> float:
    gc.collect()
    gc.disable()
    try:
        started = now()
        action()
        return now() - started
    finally:
        gc.enable()


def medians(
    contenders: dict[str, Callable[[], object]], repeats: int, now: Callable[[], float]
) -> dict[str, float]:
    """The median time of each contender, run in rotating order repeat by repeat."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(contenders[name], now))
    return {name: statistics.median(found) for name, found in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per figure (default 7)")
    parser.add_argument("--wall", action="store_true", help="wall clock instead of CPU time")
    parser.add_argument("--goal", type=float, default=3.0, help="the speed-up goal (default 3)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--mode", action="append", help="only this mode (repeatable)")
    parser.add_argument(
        "--suite", action="store_true", help="also the whole suite in-process, every mode"
    )
    args = parser.parse_args(argv)
    now = clock(args.wall)
    every = payloads()
    small = [p for p in every if len(p[2]) <= SMALL]
    kind = "wall" if args.wall else "CPU"
    print(
        f"shipped suite: {len(every)} payloads ({len(small)} up to {SMALL:,} characters); "
        f"µs per payload, {kind}, median of {args.repeats}"
    )
    print(
        f"{'mode':<16}{'before':>9}{'now':>9}{'faster':>8}   "
        f"{'small: before':>13}{'now':>9}{'faster':>8}"
    )
    missed = []
    for mode in args.mode or SEEDED:
        got = medians(
            {
                "before": changing(every, oracle_modes._mutator, mode),
                "now": changing(every, modes.mutator, mode),
                "small before": changing(small, oracle_modes._mutator, mode),
                "small now": changing(small, modes.mutator, mode),
            },
            args.repeats,
            now,
        )
        whole = got["before"] / got["now"]
        part = got["small before"] / got["small now"]
        print(
            f"{mode:<16}{got['before'] / len(every) * 1e6:9.1f}{got['now'] / len(every) * 1e6:9.1f}"
            f"{whole:7.1f}x   {got['small before'] / len(small) * 1e6:13.1f}"
            f"{got['small now'] / len(small) * 1e6:9.1f}{part:7.1f}x"
        )
        if whole < args.goal:
            missed.append(mode)
    floor = medians({"seed": seeding(every)}, args.repeats, now)["seed"]
    print(f"{'a fresh generator':<16}{'':>9}{floor / len(every) * 1e6:9.1f}  (random.Random(str))")
    if args.suite:
        got = medians(
            {"before": whole_run(oracle_modes._mutator), "now": whole_run(modes._mutator)},
            args.repeats,
            now,
        )
        print(
            f"the whole suite in-process, every mode ({kind}): before {got['before']:.3f} s, "
            f"now {got['now']:.3f} s, {got['before'] / got['now']:.2f}x"
        )
    if missed:
        print(f"less than {args.goal:g}x faster: {', '.join(missed)}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
