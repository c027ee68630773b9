"""How long a full `conform run` takes with -j 1 and -j 2 workers, against --in-process.

Each repeat runs the three commands one after the other (in a rotating order, so that all three see
the same machine load), as a user would: `conform run reference:Assembler -q` with `--in-process`,
`-j 1` and `-j 2`, wall time of the whole command (interpreter start, suite, every mode). It prints
the median of each, and the ratios -j 1 / -j 2 (the speed-up of a second worker) and -j 1 /
--in-process (what the worker process costs). The speed-up is bounded by the cores that are free:
on a busy 2-core machine expect less than 2.

The goal (issue 22): -j 1 / --in-process at most 1.5 (`--check` exits 1 when it is missed).

A fourth command, `-j 1, no head start`, is the same `-j 1` run started as
`python -c "from harness.cli import main; main()" run ...`: conform then starts the target's fork
server at the first case, as before the installed command started it ahead
(`harness.drive.forked.head_start`), and the ratio of the two is what starting it ahead saves.

Run: `python benchmarks/bench_jobs.py` (`--help` for the options).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

VARIANTS = {
    "--in-process": ["--in-process"],
    "-j 1": ["-j", "1"],
    "-j 2": ["-j", "2"],
    "-j 1, no head start": ["-j", "1"],
}
#: conform as a program that imports it under `-c`, so that no fork server is started ahead.
_NO_HEAD_START = [sys.executable, "-c", "from harness.cli import main; main(prog_name='conform')"]


def _conform() -> list[str]:
    found = shutil.which("conform")
    return [found] if found else [sys.executable, "-m", "harness"]


_CPU: dict[str, list[float]] = {}  # CPU seconds (user + system, conform and its workers) per run


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], name: str = "") -> float:
    started, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    _CPU.setdefault(name, []).append(_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each variant (default 5)")
    parser.add_argument("--target", default="reference:Assembler", help="the TARGET to run")
    parser.add_argument("--goal", type=float, default=1.5, help="-j 1 / --in-process goal (1.5)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the goal is missed")
    parser.add_argument("args", nargs="*", help="more arguments for conform run (e.g. -- -k 'x*')")
    options = parser.parse_args()
    run = ["run", options.target, "-q", *options.args]
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for repeat in range(options.repeats):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            program = _NO_HEAD_START if "no head start" in name else _conform()
            times[name].append(_time([*program, *run, *VARIANTS[name]], name))
    print(f"conform run {options.target} -q, {options.repeats} repeats, {os.cpu_count()} cores")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        shown = " ".join(f"{v:.2f}" for v in values)
        cpu = statistics.median(_CPU[name])
        print(f"  {name:<20} median {medians[name]:6.2f} s, CPU {cpu:5.2f} s   (runs: {shown})")
    print(
        f"  -j 1 / -j 2          = {medians['-j 1'] / medians['-j 2']:.2f}x (speed-up of 2 workers)"
    )
    ahead = medians["-j 1, no head start"] / medians["-j 1"]
    print(f"  -j 1 no head start / -j 1 = {ahead:.2f}x (what starting the fork server ahead saves)")
    cpu_cost = statistics.median(_CPU["-j 1"]) / statistics.median(_CPU["--in-process"])
    print(f"  CPU -j 1 / --in-process = {cpu_cost:.2f}x (both processes' CPU: load-independent)")
    cost = medians["-j 1"] / medians["--in-process"]
    print(f"  -j 1 / --in-process  = {cost:.2f}x (worker cost; goal {options.goal:g}x)")
    if options.check and cost > options.goal:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
