"""Every performance goal of issue 22, measured side by side in one run and printed as ratios.

Each goal reuses the benchmark that owns its figure, so a number here is the number there:

- `reference`: `bench_assembler.py`'s stream (4,000 payloads): the reference against `json.loads`
  and a msgspec typed decode of the chunk shape; and every stream shape of its `SHAPES` (the
  shipped llama-server captures, long reasoning, small and large pieces, non-ASCII, escapes, tool
  calls, timings, usage, progress, unknown members, logprobs, bare chunks), each against its own
  typed decode, the worst one named. Goal: at most 2x the msgspec typed decode, on each.
- `suite`: `conform run reference:Assembler -q` over the shipped suite in every mode, through
  worker processes and `--in-process`, wall time of the whole command (as `bench_jobs.py`).
  Goal: at most 1.5 s through workers, and at most 1.5x in-process. Its detail also gives `-j 2`
  and the CPU of each command with its workers (the harness and its worker take turns within a
  pass: the wall time falls below that CPU only where they overlap).
- `pipes`: one large payload through a worker against in-process (`bench_pipes.py`), at 1 MiB and
  16 MiB, and at 16 MiB an answer the payload escapes (lines and quotes, as most long answers).
  Goal: a 16 MiB payload works, and takes at most 2 s through a worker (the ratios to in-process
  are in the detail: protocol 1 writes every payload and every text as a JSON string).
- `long`: a generated recording of 150,000 payloads (`synth.py`) through a worker at the default
  `--timeout`. Goal: it passes.
- `matrix`: `conform matrix` over the seven shipped targets (the reference, the Python, JS, Go
  and Rust examples, the openai and litellm adapters; a target whose toolchain or client is not
  installed is left out, and said so), every mode, as `tests/tools/matrix_docs.py` runs it. Goal: at
  most 10 s wall. Its detail says where the time goes: the CPU of conform and all its workers
  (the wall time cannot fall below that over the cores) and each target's own wall time, and,
  side by side, the same matrix and litellm's `conform run -j 2` with every worker importing its
  target itself (`CONFORM_NO_FORK_SERVER=1`, as before the fork server); and the floor no
  adapter change moves: the CPU each Python client's own stack spends a text chunk and a case.

The project's own pytest is not measured here. Every figure is the median of interleaved repeats
(the garbage collector off while an in-process contender runs), so both sides of a ratio see the
same machine load. In-process figures are CPU time of this process by default (on a shared
machine other programs' load then shifts them less; `--wall` for the wall clock); figures of whole
commands (`suite`, `long`, `matrix`) and of workers (`pipes`) are wall time. `--quick` makes each
figure from fewer repeats and smaller workloads (the same goals; noisier); `--only` picks goals;
`--check` exits 1 when a goal is missed.

Run: `python benchmarks/goals.py` (about five minutes on a quiet 2-core machine; `--quick`, one).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_assembler  # noqa: E402
import bench_pipes  # noqa: E402

from harness.check.modes import PLAIN  # noqa: E402
from tests.tools import synth  # noqa: E402

GOALS = ("reference", "suite", "pipes", "long", "matrix")

#: The clock of in-process figures (`--wall`: the wall clock; by default this process's CPU).
CLOCK: Callable[[], float] = time.process_time


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


@dataclass(frozen=True)
class Figure:
    """One measured figure against its goal."""

    goal: str
    what: str
    value: float
    limit: float
    unit: str  # "x" (a ratio) or "s"
    detail: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def line(self) -> str:
        shown = f"{self.value:.2f}{self.unit}"
        verdict = "met" if self.met else "MISSED"
        return f"  {self.what:<58} {shown:>9}  goal <= {self.limit:g}{self.unit}  {verdict}" + (
            f"\n      {self.detail}" if self.detail else ""
        )


@dataclass(frozen=True)
class Options:
    quick: bool

    def pick(self, full: int, quick: int) -> int:
        return quick if self.quick else full


def _keep_bytecode() -> None:
    """Under PYTHONDONTWRITEBYTECODE (some sandboxes and CI images set it), let the commands timed
    here keep their bytecode in a cache outside the tree, as an installed package has it: else
    every `conform` and every worker compiles harness/ again, about 0.1 s apiece, which no user
    with a normal install pays (tests/conftest.py does the same for the tests)."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conform"
        os.environ["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def _conform() -> list[str]:
    found = shutil.which("conform")
    return [found] if found else [sys.executable, "-m", "harness"]


def _wall(command: list[str], *, env: dict[str, str] | None = None) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def _children_cpu() -> float:
    """CPU seconds (user and system) of every child process waited for so far, and theirs."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _interleaved(contenders: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """The median of each contender's own timing, run in rotating order repeat by repeat."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(contenders[name]())
    return {name: statistics.median(found) for name, found in times.items()}


# --- the reference against its floors -----------------------------------------------------------


def measure_reference(options: Options) -> Iterator[Figure]:
    repeats = options.pick(15, 5)
    stream = bench_assembler.build_stream(options.pick(4000, 2000))
    runs = {
        "json.loads": bench_assembler.run_json_loads,
        "msgspec typed": bench_assembler.run_msgspec_typed,
        "reference": _reference_over(stream),
    }
    medians = _interleaved(
        {name: lambda r=run: timed(lambda: r(stream)) for name, run in runs.items()},
        repeats,
    )
    per = {name: seconds / len(stream) * 1e6 for name, seconds in medians.items()}
    detail = (
        f"{len(stream)} payloads; µs/payload: json.loads {per['json.loads']:.2f}, msgspec "
        f"typed {per['msgspec typed']:.2f}, reference {per['reference']:.2f} "
        f"({medians['reference'] / medians['json.loads']:.2f}x json.loads)"
    )
    ratio = medians["reference"] / medians["msgspec typed"]
    yield Figure("reference", "reference / msgspec typed decode, bench_assembler stream", ratio,
                 2.0, "x", detail)  # fmt: skip
    # Every stream shape of bench_assembler.SHAPES (the shipped captures among them), each against
    # its own typed decode, timed by the clock of every in-process figure here: the worst one is
    # the figure, so that a miss on any shape shows.
    bench_assembler.CLOCK = CLOCK
    shapes = list(bench_assembler.measure_shapes(options.pick(4000, 2000), repeats))
    worst = max(shapes, key=lambda shape: shape.ratio)
    ranked = sorted(shapes, key=lambda shape: -shape.ratio)
    detail = f"{len(shapes)} shapes, ratio each: " + ", ".join(
        f"{shape.name} {shape.ratio:.2f}x" for shape in ranked
    )
    yield Figure("reference", f"reference / msgspec typed decode, worst shape ({worst.name})",
                 worst.ratio, bench_assembler.TYPED_GOAL, "x", detail)  # fmt: skip


def _reference_over(stream: list[str]) -> Callable[[list[str]], Any]:
    """The reference over a stream that may hold error payloads (a capture of an error)."""
    import reference

    def run(payloads: list[str]) -> None:
        assembler = reference.Assembler()
        for data in payloads:
            try:
                assembler.push(data)
            except reference.InferError:
                assembler = reference.Assembler()

    return run


# --- whole runs through workers ----------------------------------------------------------------


def measure_suite(options: Options) -> Iterator[Figure]:
    base = [*_conform(), "run", "reference:Assembler", "-q"]
    outcomes: dict[str, int] = {}
    cpu: dict[str, list[float]] = {}

    def timed(extra: list[str], name: str) -> Callable[[], float]:
        def run() -> float:
            before = _children_cpu()
            seconds, code, _ = _wall([*base, *extra])
            cpu.setdefault(name, []).append(_children_cpu() - before)  # the harness and worker
            outcomes[name] = code
            return seconds

        return run

    medians = _interleaved(
        {
            "workers": timed([], "workers"),
            "in-process": timed(["--in-process"], "in-process"),
            "-j 2": timed(["-j", "2"], "-j 2"),
        },
        options.pick(5, 2),
    )
    bad = {name: code for name, code in outcomes.items() if code != 0}
    detail = f"median wall: workers {medians['workers']:.2f} s, in-process "
    detail += f"{medians['in-process']:.2f} s, -j 2 {medians['-j 2']:.2f} s; median CPU (user+sys, "
    detail += "the harness and its workers): " + ", ".join(
        f"{name} {statistics.median(found):.2f} s" for name, found in cpu.items()
    )
    detail += f"; exit codes {bad}" if bad else ""
    yield Figure("suite", "whole suite, all modes, through workers: wall", medians["workers"],
                 1.5, "s", detail)  # fmt: skip
    yield Figure("suite", "whole suite, all modes: workers / in-process",
                 medians["workers"] / medians["in-process"], 1.5, "x")  # fmt: skip


def measure_pipes(options: Options) -> Iterator[Figure]:
    from harness.drive.inprocess import InProcessDriver, load_target
    from harness.drive.spec import python_target_driver

    repeats = options.pick(5, 2)
    in_process = InProcessDriver(load_target("reference:Assembler"))
    worker = python_target_driver("reference:Assembler", timeout=600)
    worker.start()
    ratios = []
    try:
        for mib, shape in ((1, "plain"), (16, "plain"), (16, "escaped")):
            payloads = bench_pipes._payloads(mib * 2**20, shape)
            bench_pipes._once(worker, payloads)  # warm up both sides
            bench_pipes._once(in_process, payloads)
            medians = _interleaved(
                {
                    "in-process": lambda p=payloads: bench_pipes._once(in_process, p),
                    "worker": lambda p=payloads: bench_pipes._once(worker, p),
                },
                repeats,
            )
            what = "payload" if shape == "plain" else "payload, its text escaped"
            ratios.append(
                f"{mib} MiB {shape}: worker {medians['worker']:.3f} s, in-process "
                f"{medians['in-process']:.4f} s ({medians['worker'] / medians['in-process']:.0f}x)"
            )
            if mib == 16:
                yield Figure("pipes", f"one {mib} MiB {what} through a worker: wall",
                             medians["worker"], 2.0, "s", "; ".join(ratios))  # fmt: skip
    finally:
        worker.close()


def measure_long(options: Options) -> Iterator[Figure]:
    del options  # the goal is about this length: no quick version of it
    with tempfile.TemporaryDirectory(prefix="conform-goals-long-") as scratch:
        suite = synth.write_suite(Path(scratch), {"long": 150_000})
        command = [*_conform(), "run", "reference:Assembler", "--suite", str(suite.root)]
        seconds, code, output = _wall([*command, "--mode", PLAIN, "-q"])
    last = output.strip().splitlines()[-1] if output.strip() else ""
    yield Figure("long", "150,000-payload recording, default --timeout: exit code",
                 float(code), 0.0, "", f"{seconds:.1f} s wall; {last}")  # fmt: skip


# --- the matrix --------------------------------------------------------------------------------


#: Runs `conform` (its arguments follow) and writes, at exit, the CPU seconds of this process (the
#: harness: one interpreter, so at most one core's worth a second) and of the workers it waited for.
_RUSAGE = """
import resource, sys
from harness.cli import main
try:
    main(sys.argv[1:], prog_name="conform")
finally:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    cpu = [used.ru_utime + used.ru_stime for used in (own, kids)]
    print(file=sys.stderr)  # after any unfinished line
    print("conform-cpu", *cpu, file=sys.stderr)
"""


def _split_cpu(output: str) -> tuple[float, float]:
    """The harness's own CPU and its workers' from a `_RUSAGE` run's output."""
    line = next(ln for ln in reversed(output.splitlines()) if ln.startswith("conform-cpu "))
    own, workers = line.split()[1:]
    return float(own), float(workers)


def _matrix_targets(folder: Path) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The matrix's targets that can run here, as (label, the matrix's arguments for it), and a
    note for each one left out."""
    targets = [
        ("reference", ["reference:Assembler"]),
        ("python", ["python=examples/python/simple_assembler.py:Assembler"]),
    ]
    missing = []
    for name in ("openai", "litellm"):
        if importlib.util.find_spec(name) is None:  # not imported here: litellm is slow to
            missing.append(f"{name} (pip install -e '.[clients]')")  # import, and the matrix
            continue  # imports it in its own worker anyway
        args = [f"{name}=examples/clients/{name}_adapter.py:Assembler"]
        targets.append((name, [*args, "--xfail", f"{name}=examples/clients/{name}.xfail"]))
    if shutil.which("node"):
        targets.append(("js", ["--exec", "js=node examples/js/assembler.mjs"]))
    else:
        missing.append("js (node)")
    try:
        from tests.tools import matrix_docs as matrix_doc

        go, rust = matrix_doc.build(folder)
        targets += [("go", ["--exec", f"go={go}"]), ("rust", ["--exec", f"rust={rust}"])]
    except (OSError, subprocess.CalledProcessError) as exc:
        missing.append(f"go and rust (could not build: {exc})")
    return targets, missing


def _alone(label: str, args: list[str]) -> list[str]:
    """`conform run`'s arguments for one matrix target run alone, as the matrix runs it."""
    if args[0] == "--exec":
        run = ["--exec", args[1].removeprefix(f"{label}=")]
    else:
        run = [args[0].removeprefix(f"{label}=")]
    if "--xfail" in args:
        run += ["--xfail", args[args.index("--xfail") + 1].removeprefix(f"{label}=")]
    return ["run", *run, "-q"]


#: Prints, as JSON, the CPU a Python client adapter spends (the client's own stack: the adapter
#: glue is a few per cent of it, docs/clients.md) per text chunk and per case: the medians of
#: streams of 1 and of 41 text chunks (each with a role chunk and a finish chunk), in-process, the
#: client imported and warmed first. The slope is the per-chunk cost; what a 1-chunk stream costs
#: beyond its three chunks is the per-case one (the stream, the final build).
_FLOOR = """
import json, statistics, sys, time
sys.path.insert(0, "examples/clients")
make = __import__(sys.argv[1]).Assembler
def chunk(delta, finish=None):
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "chatcmpl-floor", "object": "chat.completion.chunk", "created": 1,
                       "model": "llama", "choices": [choice]})
def stream(texts):
    return [chunk({"role": "assistant", "content": None}), *[chunk({"content": "word "})] * texts,
            chunk({}, "stop"), "[DONE]"]
def per_case(payloads, n):
    began = time.process_time()
    for _ in range(n):
        assembler = make()
        for data in payloads:
            assembler.push(data)
        assembler.finish(False)
    return (time.process_time() - began) / n
per_case(stream(5), int(sys.argv[2]))
short, long = stream(1), stream(41)
pairs = [(per_case(short, int(sys.argv[2])), per_case(long, int(sys.argv[3]))) for _ in range(5)]
one = statistics.median(s for s, _ in pairs)
chunk_cost = statistics.median((l - s) / 40 for s, l in pairs)
print(json.dumps({"chunk": chunk_cost, "case": max(one - 3 * chunk_cost, 0.0)}))
"""


def _client_floor(
    name: str, options: Options, env: dict[str, str] | None
) -> tuple[float, float] | None:
    """(CPU seconds a chunk, CPU seconds a case) of the client adapter `name`, or None."""
    counts = ["60", "15"] if not options.quick else ["20", "5"]
    command = [sys.executable, "-c", _FLOOR, f"{name}_adapter", *counts]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    if done.returncode != 0:
        return None
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["chunk"]), float(found["case"])


def measure_matrix(options: Options) -> Iterator[Figure]:
    with tempfile.TemporaryDirectory(prefix="conform-goals-matrix-") as scratch:
        targets, missing = _matrix_targets(Path(scratch))
        wrapped = [sys.executable, "-c", _RUSAGE]
        command = ["matrix", *(a for _, args in targets for a in args), "--timeout", "60"]
        command += ["--json", str(Path(scratch) / "matrix.json")]
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        # Side by side: each Python target's workers importing it themselves, as before the
        # fork server (docs/layout.md#how-python-workers-start).
        unforked = {**env, "CONFORM_NO_FORK_SERVER": "1"}
        times, codes, cpus, own = [], [], [], []
        plain_times, plain_cpus = [], []
        for _ in range(options.pick(3, 1)):
            seconds, code, output = _wall([*wrapped, *command], env=env)
            harness, workers = _split_cpu(output)
            shown = output
            cpus.append(harness + workers)  # conform and every worker it waited for
            own.append(harness)
            times.append(seconds)
            codes.append(code)
            seconds, _, output = _wall([*wrapped, *command], env=unforked)
            plain_times.append(seconds)
            plain_cpus.append(sum(_split_cpu(output)))
        # The target with the heaviest import, with two workers (`conform run -j 2`), both ways.
        jobs: dict[str, list[tuple[float, float]]] = {"forked": [], "unforked": []}
        litellm = dict(targets).get("litellm")
        for _ in range(options.pick(3, 1) if litellm else 0):
            assert litellm is not None
            for name, environ in (("forked", env), ("unforked", unforked)):
                run = [*wrapped, *_alone("litellm", litellm), "-j", "2", "--timeout", "60"]
                seconds, _, output = _wall(run, env=environ)
                jobs[name].append((seconds, sum(_split_cpu(output))))
        # Where the CPU goes: each target run alone (`conform run`, once), the harness's own CPU
        # (it decodes and compares every reply) and its worker's.
        alone = []
        for label, args in targets:
            _, _, output = _wall([*wrapped, *_alone(label, args), "--timeout", "60"], env=env)
            alone.append((label, *_split_cpu(output)))
        # The floor no adapter change moves: what each Python client's own stack costs.
        floors = {
            n: _client_floor(n, options, env) for n in ("openai", "litellm") if n in dict(targets)
        }
    count = 7 - len(missing)
    cpu, cores = statistics.median(cpus), os.cpu_count() or 1
    # Where the wall time goes: the CPU all processes used (the wall time cannot fall below its
    # share of this machine's cores, nor below the harness's own CPU, one interpreter) and each
    # target's own wall time, as the matrix prints it.
    per_target = [
        f"{line.split(':')[0]} {line.rsplit('(', 1)[-1].split(')')[0]}"
        for line in shown.splitlines()
        if " runs, " in line
    ]
    detail = f"{count} targets; runs: {' '.join(f'{t:.1f}' for t in times)} s; exit {codes}"
    detail += f"\n      CPU of conform and its workers {cpu:.1f} s (at best {cpu / cores:.1f} s"
    detail += f" wall on {cores} cores), of which conform's own {statistics.median(own):.1f} s"
    detail += f" (one interpreter: at best that wall); each target's wall: {', '.join(per_target)}"
    detail += "\n      each target alone (conform run, CPU s): harness + worker = "
    detail += ", ".join(f"{label} {h:.1f} + {w:.1f}" for label, h, w in alone)
    plain_cpu, plain_wall = statistics.median(plain_cpus), statistics.median(plain_times)
    detail += (
        f"\n      without the fork server (side by side): wall {plain_wall:.1f} s, CPU"
        f" {plain_cpu:.1f} s; with it: {statistics.median(times) / plain_wall:.2f}x the wall,"
        f" {cpu / plain_cpu:.2f}x the CPU"
    )
    shown_floors = [
        f"{name} {found[0] * 1e6:.0f} us a chunk + {found[1] * 1e3:.2f} ms a case"
        for name, found in floors.items()
        if found is not None
    ]
    if shown_floors:
        detail += "\n      the clients' own CPU (their stacks in-process, medians): " + "; ".join(
            shown_floors
        )
    if jobs["forked"]:
        (fw, fc), (uw, uc) = (
            tuple(statistics.median(v[i] for v in jobs[k]) for i in (0, 1)) for k in jobs
        )
        detail += (
            f"\n      litellm alone, -j 2: wall {fw:.1f} s, CPU {fc:.1f} s with the fork server;"
            f" {uw:.1f} s, {uc:.1f} s without ({fw / uw:.2f}x the wall, {fc / uc:.2f}x the CPU)"
        )
    if missing:
        detail += f"; left out: {', '.join(missing)}"
    yield Figure("matrix", f"conform matrix over the shipped targets ({count} of 7): wall",
                 statistics.median(times), 10.0, "s", detail)  # fmt: skip


MEASURES: dict[str, Callable[[Options], Iterator[Figure]]] = {
    "reference": measure_reference,
    "suite": measure_suite,
    "pipes": measure_pipes,
    "long": measure_long,
    "matrix": measure_matrix,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller workloads")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument(
        "--wall",
        action="store_true",
        help="time in-process figures by the wall clock (default: CPU time of this process, "
        "which other programs on a shared machine disturb less)",
    )
    parser.add_argument(
        "--only", default=",".join(GOALS), help=f"goals to measure, comma-separated ({GOALS})"
    )
    args = parser.parse_args(argv)
    _keep_bytecode()
    chosen = [name for name in args.only.split(",") if name]
    unknown = sorted(set(chosen) - set(GOALS))
    if unknown:
        parser.error(f"unknown goal(s) {', '.join(unknown)}; choose from {', '.join(GOALS)}")
    options = Options(quick=args.quick)
    if args.wall:
        global CLOCK
        CLOCK = time.perf_counter
    print(
        f"issue 22 goals{' (--quick)' if args.quick else ''}: python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start"
    )
    figures: list[Figure] = []
    for name in chosen:
        started = time.perf_counter()
        print(f"\n{name}:", flush=True)
        for figure in MEASURES[name](options):
            figures.append(figure)
            print(figure.line(), flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    missed = [figure for figure in figures if not figure.met]
    print(f"\n{len(figures) - len(missed)} of {len(figures)} figures meet their goal")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
