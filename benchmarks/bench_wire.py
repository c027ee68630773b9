"""The harness's CPU per request through conform's own worker, against the same calls in-process.

Every case of the shipped suite, plain payloads, is played through a `ProcessDriver` speaking the
best protocol the worker offers, as the runner plays it (`start_case`, `plan`, `plan_next` of the
case after it, the pushes and `finish`), and through an `InProcessDriver`; no golden comparison.
It prints this process's CPU (user+sys) per request for each, their difference (what the worker's
protocol costs the harness beyond the in-process calls, which include the reference's own work),
and the worker's own CPU on them (Linux's schedstat), after a pass over the suite that warms both
up; and the context switches of each side per case (each one a wait for the other side, which
on a loaded machine may also wait for a core). Interleaved repeats, medians. `goals.py --only
suite` quotes the first two in its detail.

Run: `python benchmarks/bench_wire.py [--repeats N] [--rounds N]`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.drive.inprocess import InProcessDriver, load_target  # noqa: E402
from harness.drive.spec import python_target_driver  # noqa: E402
from harness.suite.cases import Suite  # noqa: E402
from harness.suite.recording import iter_payloads, read_info  # noqa: E402

Case = tuple[list[str], list[int], bool]


def _cases() -> list[Case]:
    found = []
    for case in Suite.open(ROOT).cases():
        payloads = list(iter_payloads(case.recording))
        if payloads and all(len(p.data) < 16 * 1024 for p in payloads):
            capped = bool(read_info(case.recording).thinking_capped)
            found.append(([p.data for p in payloads], [p.line for p in payloads], capped))
    return found


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _run_time(pid: int | None) -> float | None:
    """Seconds process `pid` has run on a CPU so far (Linux's schedstat), or None."""
    try:
        with open(f"/proc/{pid}/schedstat") as file:
            return int(file.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _switches(pid: int | None = None) -> int:
    """Context switches (voluntary and not) of this process, or of process `pid` (Linux's
    /proc; 0 where it cannot be read)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_nvcsw + usage.ru_nivcsw
    try:
        with open(f"/proc/{pid}/status") as file:
            return sum(int(line.split()[1]) for line in file if "ctxt_switches:" in line)
    except (OSError, ValueError, IndexError):
        return 0


def _play(driver: object, cases: list[Case], rounds: int) -> int:
    """Every case `rounds` times; the requests made."""
    requests = 0
    plan = getattr(driver, "plan", None)
    plan_next = getattr(driver, "plan_next", None)
    order = cases * rounds
    for number, (pushes, lines, capped) in enumerate(order):
        driver.start_case()  # type: ignore[attr-defined]
        if plan is not None:
            plan(pushes, finish=capped)
            if number + 1 < len(order) and plan_next is not None:
                following = order[number + 1]
                plan_next(following[0], finish=following[2])
        erred = False
        for data, line in zip(pushes, lines, strict=True):
            requests += 1
            if "error" in driver.push(data, line):  # type: ignore[attr-defined]
                erred = True
                break
        requests += 1  # new
        if not erred:
            requests += 1
            driver.finish(capped)  # type: ignore[attr-defined]
    return requests


def measure(repeats: int = 5, rounds: int = 3) -> tuple[dict[str, float], int]:
    """The medians (microseconds a request) of this process's CPU through the worker and
    in-process, and of the worker's own; and the requests of one repeat."""
    cases = _cases()
    factory = load_target("reference:Assembler")
    figures: dict[str, list[float]] = {"worker": [], "in-process": [], "worker's own": []}
    switched: dict[str, list[float]] = {"harness": [], "worker": []}
    requests = 0
    for _ in range(repeats):
        driver = python_target_driver("reference:Assembler")
        driver.start()
        _play(driver, cases, 1)  # warm: each kind of case once (first calls, the files' mappings)
        children = _cpu(resource.RUSAGE_CHILDREN)
        ran = _run_time(driver.pid)
        switches = (_switches(), _switches(driver.pid))
        before = _cpu()
        requests = _play(driver, cases, rounds)
        figures["worker"].append((_cpu() - before) / requests)
        switched["harness"].append((_switches() - switches[0]) / (len(cases) * rounds))
        switched["worker"].append((_switches(driver.pid) - switches[1]) / (len(cases) * rounds))
        ran_after = _run_time(driver.pid)
        driver.close()
        if ran is None or ran_after is None:  # the whole of its life, start and warm-up too
            figures["worker's own"].append((_cpu(resource.RUSAGE_CHILDREN) - children) / requests)
        else:
            figures["worker's own"].append((ran_after - ran) / requests)
        inprocess = InProcessDriver(factory)
        _play(inprocess, cases, 1)
        before = _cpu()
        _play(inprocess, cases, rounds)
        figures["in-process"].append((_cpu() - before) / requests)
    medians = {name: statistics.median(found) * 1e6 for name, found in figures.items()}
    for name, found in switched.items():  # (a count per case, not microseconds)
        medians[f"switches per case, {name}"] = statistics.median(found)
    return medians, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the suite per repeat")
    args = parser.parse_args()
    medians, requests = measure(args.repeats, args.rounds)
    print(f"{len(_cases())} cases x {args.rounds} rounds, {requests:,} requests a repeat")
    for name, value in medians.items():
        if name.startswith("switches"):
            print(f"  context {name + ':':33}{value:6.2f}")
        else:
            print(f"  harness CPU per request, {name:12} {value:6.2f} us")
    extra = medians["worker"] - medians["in-process"]
    print(f"  worker minus in-process            {extra:6.2f} us")


if __name__ == "__main__":
    main()
