"""How much time the harness adds per payload, against the time the assembler itself takes.

Two workloads, each in every mode:

- the shipped suite (`recordings/`), and
- a generated suite of 1,000 recordings (`tests/tools/synth.py`, 60 payloads each by default; in
  plain mode only unless `--generated-modes` names more, since `truncated` pushes every prefix).

For each, in one process and interleaved repeat by repeat:

- `run`: the whole run as `conform run reference:Assembler --in-process` does it
  (`harness.check.parallel.run` with an in-process driver): read, inject, push, normalize, compare;
- `assembler`: the reference alone on the same workload: the payloads each mode pushes
  (prepared beforehand), fresh assemblers where the run makes them, the same `finish` calls.

Harness overhead is `run - assembler`, shown per payload pushed and as a ratio to the
assembler's own time per payload (the target: below 1.0, in plain mode). A breakdown of the
overhead follows for plain mode: reading the recordings, `inject`, normalizing (`push_step`
minus `push`, and `push_steps`, the batch the runner uses in-process, minus `push`),
comparing with the golden steps one by one, rendering each golden file from a passing pass (what
an in-process run does instead of parsing it and comparing steps), and parsing it (what a run does
when a pass needs the document). Each figure is the median of the repeats, with the garbage
collector off while a contender runs. The script also checks that each golden file is parsed at
most once per run and that deepdiff is never imported when every case passes.

`conform run` end to end (a child process, startup included) is timed once per mode too.

Run: `python benchmarks/bench_harness.py` (`--help` for the options).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference  # noqa: E402
from harness.check import parallel, runner  # noqa: E402
from harness.check.compare import same_step  # noqa: E402
from harness.check.modes import MODES, PLAIN, TRUNCATED, mutator, truncation_points  # noqa: E402
from harness.drive.inprocess import InProcessDriver, push_step  # noqa: E402
from harness.drive.normalize import REFERENCE_STATE, SAID  # noqa: E402
from harness.suite import golden as golden_files  # noqa: E402
from harness.suite.cases import Case, Suite  # noqa: E402
from harness.suite.recording import iter_payloads, read_recording  # noqa: E402
from tests.tools import synth  # noqa: E402

SEED = 20261129


# --- the workload of one mode, prepared ------------------------------------------------------


def workload(cases: Sequence[Case], mode: str) -> list[tuple[list[str], bool]]:
    """Every assembler the run makes in `mode`: the payloads it is pushed, and the finish flag.

    A run stops a case at an error step (no finish); the golden files say where.
    """
    passes: list[tuple[list[str], bool]] = []
    for case in cases:
        golden = golden_files.read_golden(case)
        steps = len(golden["steps"])
        payloads = [p.data for p in iter_payloads(case.recording)][:steps]
        finishes = "finish" in golden
        if mode == TRUNCATED:
            for cut in truncation_points(steps, seed=SEED, case_id=case.case_id):
                passes.append((payloads[:cut], True))
            continue
        change = mutator(mode, seed=SEED, case_id=case.case_id)
        if change is not None:
            payloads = [change(index, data) for index, data in enumerate(payloads)]
        passes.append((payloads, finishes))
    return passes


def assemble(passes: list[tuple[list[str], bool]]) -> None:
    """The reference alone, over a prepared workload."""
    error = reference.InferError
    for payloads, finishes in passes:
        assembler = reference.Assembler()
        try:
            for data in payloads:
                assembler.push(data)
            if finishes:
                assembler.finish(False)
        except error:
            pass


def floor(cases: Sequence[Case]) -> None:
    """The least any harness does over `cases` in plain mode, with the reference as its target:
    read each recording and take its payloads (the reader's fast path), push each into a fresh
    reference, read the state after each push, keep each step, call `finish`, and write the pass
    down once (one msgspec encoding). No golden file is read and nothing is compared, so the
    harness's real cost cannot fall below this (`floor - assembler`) on this machine."""
    state = REFERENCE_STATE[reference.Assembler]
    encode = msgspec.json.Encoder().encode
    error = reference.InferError
    for case in cases:
        _, payloads = read_recording(case.recording)
        assembler = reference.Assembler()
        steps: list[dict[str, Any]] = []
        try:
            for payload in payloads or ():
                steps.append({"line": payload.line, "events": assembler.push(payload.data),
                              "state": state(assembler)})  # fmt: skip
            steps.append({"finish": assembler.finish(False)})
        except error:
            pass
        encode(steps)


# --- timing ----------------------------------------------------------------------------------


#: The clock of in-process figures (benchmarks/goals.py sets `time.process_time`).
CLOCK: Callable[[], float] = time.perf_counter


def timed(action: Callable[[], Any]) -> float:
    """Seconds `action` takes by `CLOCK`, with the garbage collector off."""
    gc.collect()
    gc.disable()
    try:
        started = CLOCK()
        action()
        return CLOCK() - started
    finally:
        gc.enable()


def medians(contenders: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The median time of each contender, run interleaved repeat by repeat."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, action in contenders.items():
            times[name].append(timed(action))
    return {name: statistics.median(found) for name, found in times.items()}


def run_all(cases: Sequence[Case], mode: str) -> None:
    driver = InProcessDriver(reference.Assembler)
    results = list(parallel.run(cases, driver, modes=[mode], seed=SEED))
    failed = [r for r in results if r.status != runner.PASSED]
    if failed:
        raise SystemExit(f"the reference failed {failed[0].case_id} [{mode}]: not a benchmark")


def us(seconds: float, count: int) -> str:
    return f"{seconds / count * 1e6:8.2f} µs"


def report_modes(title: str, cases: Sequence[Case], modes: Sequence[str], repeats: int) -> None:
    print(f"\n{title}: {len(cases)} recordings, median of {repeats}")
    print(
        f"{'mode':<15}{'pushes':>9}  {'run/payload':>12}  {'assembler':>11}  "
        f"{'harness':>11}  harness/assembler"
    )
    for mode in modes:
        passes = workload(cases, mode)
        pushes = sum(len(p) for p, _ in passes)
        got = medians(
            {"run": lambda m=mode: run_all(cases, m), "assembler": lambda p=passes: assemble(p)},
            repeats,
        )
        overhead = got["run"] - got["assembler"]
        print(
            f"{mode:<15}{pushes:>9}  {us(got['run'], pushes)}  {us(got['assembler'], pushes)}  "
            f"{us(overhead, pushes)}  {overhead / got['assembler']:6.2f}"
        )


def report_breakdown(cases: Sequence[Case], repeats: int) -> None:
    """Where plain mode's overhead goes."""
    goldens = [golden_files.read_golden(case) for case in cases]
    payloads = [[p.data for p in iter_payloads(case.recording)] for case in cases]
    pairs = []
    for golden, texts in zip(goldens, payloads, strict=True):
        assembler = reference.Assembler()
        for expected, data in zip(golden["steps"], texts, strict=False):
            pairs.append((expected, push_step(assembler, data, expected["line"])))
    count = len(pairs)

    def read() -> None:
        for case in cases:
            for _ in iter_payloads(case.recording):
                pass

    def push_only() -> None:
        for texts in payloads:
            assembler = reference.Assembler()
            try:
                for data in texts:
                    assembler.push(data)
            except reference.InferError:
                pass

    def push_and_normalize() -> None:
        for texts in payloads:
            assembler = reference.Assembler()
            for data in texts:
                if "error" in push_step(assembler, data, 0):
                    break

    lines = [list(range(len(texts))) for texts in payloads]

    def push_in_batches() -> None:  # as the runner pushes a whole pass in-process
        driver = InProcessDriver(reference.Assembler)
        for texts, numbers in zip(payloads, lines, strict=True):
            driver.start_case()
            driver.push_steps(texts, numbers, [])

    def compare() -> None:
        for expected, actual in pairs:
            same_step(expected, actual)  # the runner's check

    def parse_golden() -> None:
        for case in cases:
            golden_files.read_golden(case)

    passes = []  # what the whole-pass verdict renders for each case (runner.rendered_pass)
    for case, texts in zip(cases, payloads, strict=True):
        info, _ = read_recording(case.recording)
        driver = InProcessDriver(reference.Assembler)
        driver.start_case()
        made: list[dict[str, Any]] = []
        driver.push_steps(texts, [p.line for p in iter_payloads(case.recording)], made)
        ended = bool(made) and "error" in made[-1]
        if ended:
            made[-1].pop(SAID, None)
        passes.append((case, info, made, None if ended else driver.finish(info.thinking_capped)))

    def render() -> None:  # reading each golden file too
        for case, info, made, finish in passes:
            golden_files.open_golden(case).renders(info, made, finish)

    got = medians(
        {
            "read": read,
            "push": push_only,
            "push_step": push_and_normalize,
            "push_steps": push_in_batches,
            "compare": compare,
            "golden": parse_golden,
            "render": render,
        },
        repeats,
    )
    print(f"\nplain mode, where the harness's time goes ({count} steps, median of {repeats})")
    print(f"  reading the recordings    {us(got['read'], count)}")
    print(f"  normalizing (push_step - push) {us(got['push_step'] - got['push'], count)}")
    print(f"  ... in batches (push_steps - push) {us(got['push_steps'] - got['push'], count)}")
    print(f"  comparing with golden     {us(got['compare'], count)}")
    print(f"  rendering the golden file {us(got['render'], count)}  (a passing pass, in-process)")
    print(f"  parsing golden (if needed) {us(got['golden'], count)}")
    print(f"  the assembler's push      {us(got['push'], count)}")
    for mode in MODES:
        change = mutator(mode, seed=SEED, case_id="x")
        if change is None:
            continue
        spent = medians(
            {mode: lambda c=change: [c(i, d) for t in payloads for i, d in enumerate(t)]},
            repeats,
        )[mode]
        print(f"  inject {mode:<18} {us(spent, count)}")


def claims(cases: Sequence[Case]) -> tuple[int, bool]:
    """Golden-file decodes in one run of every mode over `cases`, and whether deepdiff was
    imported (the aims: one decode per case; no deepdiff when every case passes)."""
    decoded: list[bytes] = []
    real = golden_files.decode_typed
    before = "deepdiff" in sys.modules

    def counting(data: bytes, part: str | None = None) -> Any:
        decoded.append(data)
        return real(data, part)

    golden_files.decode_typed = counting  # the decode under every reader of golden files
    try:
        list(parallel.run(cases, InProcessDriver(reference.Assembler), modes=MODES, seed=SEED))
    finally:
        golden_files.decode_typed = real
    return len(decoded), not before and "deepdiff" in sys.modules


def check_claims(cases: Sequence[Case]) -> None:
    decodes, deepdiff = claims(cases)
    once = "yes" if decodes <= len(cases) else "NO"
    print(
        f"\ngolden files parsed at most once per run, every mode: {once} "
        f"({decodes} for {len(cases)})"
    )
    print(f"deepdiff imported during passing runs: {'YES' if deepdiff else 'no'}")


def report_cli(suite_root: Path | None, modes: Sequence[str]) -> None:
    print("\n`conform run reference:Assembler --in-process` end to end (startup included), one run")
    suite = [] if suite_root is None else ["--suite", str(suite_root)]
    for mode in modes:
        command = [sys.executable, "-m", "harness", "run", "reference:Assembler", "--in-process"]
        started = time.perf_counter()
        done = subprocess.run(
            [*command, *suite, "--mode", mode, "-q"], capture_output=True, text=True, check=False
        )
        seconds = time.perf_counter() - started
        print(f"  {mode:<15}{seconds:7.2f} s  exit {done.returncode}  {done.stdout.strip()}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="repeats per figure (default 5)")
    parser.add_argument("--recordings", type=int, default=1000, help="generated recordings")
    parser.add_argument("--payloads", type=int, default=60, help="payloads per generated one")
    parser.add_argument(
        "--generated-modes",
        default=PLAIN,
        help=f"modes for the generated suite, comma-separated (default plain; all: {MODES})",
    )
    parser.add_argument("--skip-cli", action="store_true", help="skip the end-to-end CLI runs")
    args = parser.parse_args(argv)
    shipped = Suite.open(ROOT).cases()
    report_modes("shipped suite", shipped, MODES, args.repeats)
    report_breakdown(shipped, args.repeats)
    check_claims(shipped)
    if not args.skip_cli:
        report_cli(None, MODES)
    with tempfile.TemporaryDirectory(prefix="conform-bench-") as folder:
        sizes = {f"gen/{n:04d}": args.payloads for n in range(args.recordings)}
        generated = synth.write_suite(Path(folder), sizes).cases()
        modes = [m for m in args.generated_modes.split(",") if m]
        report_modes("generated suite", generated, modes, max(1, args.repeats // 2))
        report_breakdown(generated, max(1, args.repeats // 2))


if __name__ == "__main__":
    main()
