"""What running a target in a worker process costs, against running it in conform's own process.

Two measurements, each interleaved repeat by repeat so that both sides see the same machine load:

1. **Per payload.** Every payload of the shipped suite (plain mode) is pushed, case by case with
   `new` and `finish`, through each driver: the reference in-process (`InProcessDriver`), the
   reference in a worker through the protocol (`python -m harness.adapter`, as `conform run` does),
   and, when `node` is on PATH, the JavaScript example (`--exec 'node examples/js/assembler.mjs'`).
   The workers are started before timing; the figure is the time per request (pushes and
   finishes), the median over the repeats, and its ratio to in-process.
2. **Whole run.** `conform run reference:Assembler` from the command line, `--in-process` against
   the default worker, wall time of the whole command (interpreter start, suite, every mode).

Run: `python benchmarks/bench_protocol.py` (`--help` for the options).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.drive.base import plan_case  # noqa: E402
from harness.drive.inprocess import Driver, InProcessDriver, load_target  # noqa: E402
from harness.drive.process import ProcessDriver  # noqa: E402
from harness.drive.spec import python_target_driver  # noqa: E402
from harness.suite.cases import Suite  # noqa: E402
from harness.suite.golden import read_golden  # noqa: E402
from harness.suite.recording import iter_payloads  # noqa: E402

Case = tuple[list[tuple[str, int]], bool]  # (payload, line) pairs, thinking_capped


def _cases(patterns: tuple[str, ...]) -> list[Case]:
    suite = Suite.open(ROOT)
    cases = []
    for case in suite.cases(patterns):
        payloads = [(p.data, p.line) for p in iter_payloads(case.recording)]
        cases.append((payloads, read_golden(case)["thinking_capped"]))
    return cases


def _drive(driver: Driver, cases: list[Case]) -> int:
    """Every case through `driver`; the number of requests made (pushes and finishes)."""
    requests = 0
    for payloads, capped in cases:
        driver.start_case()
        # As the runner does: a protocol-2 worker gets the case ahead (what follows an error is
        # skipped by the program, and settled at the next case).
        plan_case(driver, [data for data, _ in payloads], finish=capped)
        failed = False
        for data, line in payloads:
            requests += 1
            if "error" in driver.push(data, line):
                failed = True
                break
        if not failed:
            requests += 1
            driver.finish(capped)
    return requests


def _per_request(drivers: dict[str, Driver], cases: list[Case], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in drivers}
    for _ in range(repeats):
        for name, driver in drivers.items():
            started = time.perf_counter()
            requests = _drive(driver, cases)
            times[name].append((time.perf_counter() - started) / requests)
    return {name: statistics.median(values) for name, values in times.items()}


def _whole_runs(commands: dict[str, list[str]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            started = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            times[name].append(time.perf_counter() - started)
            if done.returncode != 0:
                sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return {name: statistics.median(values) for name, values in times.items()}


def _table(title: str, medians: dict[str, float], unit: Callable[[float], str]) -> None:
    base = next(iter(medians.values()))
    print(title)
    width = max(len(name) for name in medians)
    for name, value in medians.items():
        print(f"  {name:<{width}}  {unit(value):>12}  {value / base:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="repeats per driver (default 15)")
    parser.add_argument("--runs", type=int, default=5, help="whole runs per side (default 5)")
    args = parser.parse_args()

    scopes = {
        "real captures (llama-server/*)": _cases(("llama-server/*",)),
        "whole suite (incl. a 200 KB payload nested 100,000 deep)": _cases(()),
    }
    drivers: dict[str, Driver] = {
        "in-process": InProcessDriver(load_target("reference:Assembler")),
        "worker (adapter)": python_target_driver("reference:Assembler"),
    }
    node = shutil.which("node")
    if node is not None:
        js = str(ROOT / "examples" / "js" / "assembler.mjs")
        drivers["node example"] = ProcessDriver([node, js])
    for driver in drivers.values():
        if isinstance(driver, ProcessDriver):
            driver.start()
    try:
        for scope, cases in scopes.items():
            payloads = sum(len(p) for p, _ in cases)
            per_request = _per_request(drivers, cases, args.repeats)
            _table(
                f"{scope}: {len(cases)} cases, {payloads} payloads; time per request "
                f"(push or finish), medians of {args.repeats}",
                per_request,
                lambda s: f"{s * 1e6:.1f} us",
            )
            overhead = per_request["worker (adapter)"] - per_request["in-process"]
            print(f"  the protocol round trip adds {overhead * 1e6:.1f} us per request\n")
    finally:
        for driver in drivers.values():
            driver.close()

    conform = [sys.executable, "-m", "harness"]
    whole = _whole_runs(
        {
            "conform run --in-process": [*conform, "run", "reference:Assembler", "--in-process"],
            "conform run (worker)": [*conform, "run", "reference:Assembler"],
        },
        args.runs,
    )
    _table(f"whole run, every mode (medians of {args.runs})", whole, lambda s: f"{s:.2f} s")


if __name__ == "__main__":
    main()
