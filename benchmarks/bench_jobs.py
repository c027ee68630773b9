"""How long a full `conform run` takes with -j 1 and -j 2 workers, against --in-process.

Each repeat runs the three commands one after the other (in a rotating order, so that all three see
the same machine load), as a user would: `conform run reference:Assembler -q` with `--in-process`,
`-j 1` and `-j 2`, wall time of the whole command (interpreter start, suite, every mode). It prints
the median of each, and the ratios -j 1 / -j 2 (the speed-up of a second worker) and -j 1 /
--in-process (what the worker process costs). The speed-up is bounded by the cores that are free:
on a busy 2-core machine expect less than 2.

Run: `python benchmarks/bench_jobs.py` (`--help` for the options).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

VARIANTS = {
    "--in-process": ["--in-process"],
    "-j 1": ["-j", "1"],
    "-j 2": ["-j", "2"],
}


def _conform() -> list[str]:
    found = shutil.which("conform")
    return [found] if found else [sys.executable, "-m", "harness"]


def _time(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each variant (default 5)")
    parser.add_argument("--target", default="reference:Assembler", help="the TARGET to run")
    parser.add_argument("args", nargs="*", help="more arguments for conform run (e.g. -- -k 'x*')")
    options = parser.parse_args()
    base = [*_conform(), "run", options.target, "-q", *options.args]
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for repeat in range(options.repeats):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            times[name].append(_time([*base, *VARIANTS[name]]))
    print(f"conform run {options.target} -q, {options.repeats} repeats, {os.cpu_count()} cores")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        shown = " ".join(f"{v:.2f}" for v in values)
        print(f"  {name:<12} median {medians[name]:6.2f} s   (runs: {shown})")
    print(
        f"  -j 1 / -j 2          = {medians['-j 1'] / medians['-j 2']:.2f}x (speed-up of 2 workers)"
    )
    print(
        f"  -j 1 / --in-process  = {medians['-j 1'] / medians['--in-process']:.2f}x (worker cost)"
    )


if __name__ == "__main__":
    main()
