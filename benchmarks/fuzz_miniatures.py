"""How many of the miniatures (tests/miniatures.py) `conform fuzz` finds on a fixed budget.

Each miniature is the reference with one bug class planted; a correct fuzzer finds every one.
Prints one line per miniature (found or missed, streams and seconds to the finding) and the
total as found/total. `--time SECONDS` (default 30, as issue 19 asks) or `--examples N` per
miniature; `-k NAME` runs only some. In-process, every mode, the default seed.

    python benchmarks/fuzz_miniatures.py --time 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.check.modes import DEFAULT_SEED  # noqa: E402
from harness.check.options import RunOptions  # noqa: E402
from harness.fuzz.loop import FuzzRequest, run_fuzz  # noqa: E402
from tests.miniatures import BATTERY, PITFALLS  # noqa: E402

MINIATURES = str(ROOT / "tests" / "miniatures.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=None)
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("-k", action="append", default=[])
    args = parser.parse_args()
    seconds = args.time if args.time is not None or args.examples is not None else 30.0
    names = sorted({*BATTERY, *PITFALLS} - {"_Reads"})
    if args.k:
        names = [n for n in names if any(k in n for k in args.k)]
    found = 0
    for name in names:
        request = FuzzRequest(
            RunOptions(target=f"{MINIATURES}:{name}", in_process=True, seed=args.seed),
            examples=args.examples,
            seconds=seconds,
            shrink_steps=0,  # found is what counts here
        )
        started = time.perf_counter()
        record = run_fuzz(request)
        took = time.perf_counter() - started
        hit = record.finding is not None
        found += hit
        where = ""
        if record.finding is not None:
            first = record.finding.results[0]
            where = first.mismatches[0].path if first.mismatches else first.status
        print(
            f"{'found ' if hit else 'MISSED'} {name:<28} {record.streams:>6} streams "
            f"{took:6.1f} s  {where}",
            flush=True,
        )
    print(f"found/total: {found}/{len(names)}")
    return 0 if found == len(names) else 1


if __name__ == "__main__":
    raise SystemExit(main())
