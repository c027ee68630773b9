"""How many of the miniatures (tests/miniatures.py) `conform fuzz` finds, and in how many streams.

Each miniature is the reference with one real bug class planted (the battery of the rules, the
typed decoders' pitfalls, the real clients' bugs); a fuzzer that can generate the class finds it.
They are the held-out check of the stream model: it is built for the classes of input, not for
these examples. Each runs as `conform fuzz tests/miniatures.py:NAME --in-process --seed 1
--time 30 --shrink 0`: one line per miniature (found or missed, the streams and seconds to the
finding, the field it differed on), then found/total and the streams it took at most. The
correct targets are fuzzed the same way and must not be flagged (the reference, every target of
tests/check/fair_targets.py, examples/python's). `--time SECONDS` (default 30) or `--examples N`
per target; `-k NAME` runs only some; `--seed`.

    python benchmarks/fuzz_miniatures.py        # about 8 minutes (the correct targets 30 s each)
    python benchmarks/fuzz_miniatures.py -k Jackson --time 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.check.options import RunOptions  # noqa: E402
from harness.fuzz.loop import FuzzRecord, FuzzRequest, run_fuzz  # noqa: E402
from tests.check.fair_targets import OTHERS  # noqa: E402
from tests.miniatures import BATTERY, CLIENT, PITFALL, POWER, named  # noqa: E402

MINIATURES = str(ROOT / "tests" / "miniatures.py")
FAIR = str(ROOT / "tests" / "check" / "fair_targets.py")
CORRECT = (
    "reference:Assembler",
    *(f"{FAIR}:{point}_{outcome}" for point, outcome in OTHERS),
    f"{FAIR}:TypeChecksOpenAI",
    f"{FAIR}:RefusesProto",
    str(ROOT / "examples" / "python" / "simple_assembler.py") + ":Assembler",
)


def fuzz(target: str, args: argparse.Namespace) -> tuple[FuzzRecord, float]:
    request = FuzzRequest(
        RunOptions(target=target, in_process=True, seed=args.seed),
        examples=args.examples,
        seconds=None if args.examples is not None else args.time,
        shrink_steps=0,  # found is what counts here
    )
    started = time.perf_counter()
    record = run_fuzz(request)
    return record, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=30.0)
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-k", action="append", default=[])
    parser.add_argument("--no-correct", action="store_true", help="skip the correct targets")
    args = parser.parse_args()
    names = named(BATTERY, PITFALL, CLIENT, POWER)
    if args.k:
        names = [n for n in names if any(k in n for k in args.k)]
    found: list[int] = []
    missed = []
    for name in names:
        record, took = fuzz(f"{MINIATURES}:{name}", args)
        finding = record.finding
        where = ""
        if finding is not None:
            first = finding.results[0]
            where = first.mismatches[0].path if first.mismatches else str(first.status)
            found.append(record.streams)
        else:
            missed.append(name)
        print(
            f"{'found ' if finding else 'MISSED'} {name:<34} {record.streams:>7} streams "
            f"{took:6.1f} s  {where}",
            flush=True,
        )
    print(
        f"found/total: {len(found)}/{len(names)}"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    if found:
        print(f"streams to a finding: median {statistics.median(found):g}, at most {max(found)}")
    flagged = []
    if not args.no_correct and not args.k:
        for target in CORRECT:
            record, took = fuzz(target, args)
            status = "FLAGGED" if record.finding is not None else "clean  "
            print(f"{status} {target.replace(str(ROOT) + '/', ''):<60} {record.streams:>7} streams")
            if record.finding is not None:
                flagged.append(target)
    return 0 if not missed and not flagged else 1


if __name__ == "__main__":
    raise SystemExit(main())
