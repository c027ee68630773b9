"""What a large payload costs in a worker process, against in-process: the worker pipes' speed.

One case of two payloads, the first carrying SIZE bytes of answer text (`"x" * SIZE` in
`delta.content`; `--shapes` adds texts the payload escapes, tool-call arguments and non-ASCII
text, `SHAPES`), is run through the reference in-process (`InProcessDriver`) and in a worker
(`python -m harness.adapter reference:Assembler`, as `conform run` starts it): `new`, both pushes,
`finish`, one call at a time (a pass this large is never sent in one request:
`harness.check.batched`). The worker is started before timing. Protocol 1 writes the payload as a
JSON string in its request, and the worker writes each long text back as one, in the push's
reply and again in the finish's, so a large payload crosses the pipes three times, encoded and
decoded each time. Repeats are interleaved so both sides see the same machine load; the figures
are medians of wall time and, beside them, of the CPU time both processes spent (on a loaded
machine each hand-over between harness and worker waits for a core, which the wall time shows and
the CPU time does not); the ratio is worker / in-process.

Run: `python benchmarks/bench_pipes.py` (`--sizes 1,16` MiB, `--shapes plain,escaped`,
`--repeats 5`, `--check` to exit 1 when a 16 MiB payload takes more than `--goal` seconds through
the worker).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.drive.inprocess import Driver, InProcessDriver, load_target  # noqa: E402
from harness.drive.spec import python_target_driver  # noqa: E402

#: The answer texts measured: one the payload holds as it is (the goal's), one it escapes (lines
#: and quotes, as most long answers: no reference into the payload can stand for it), one of
#: tool-call arguments (JSON in JSON), and one of raw non-ASCII text (UTF-8 in the payload).
SHAPES = {
    "plain": "x",
    "escaped": 'He said "yes".\n',
    "arguments": '{"path": "a/b.txt", "line": 1}',
    "unicode": "Grüße, 世界. ",
}


def _payloads(size: int, shape: str = "plain") -> list[str]:
    unit = SHAPES[shape]
    text = unit * max(1, size // len(unit.encode()))  # about `size` bytes of text, as UTF-8
    delta: dict[str, object] = {"content": text}
    if shape == "arguments":
        call = {"index": 0, "id": "call-1", "function": {"name": "write", "arguments": text}}
        delta = {"tool_calls": [call]}
    chunk = {"id": "chatcmpl-big", "choices": [{"index": 0, "delta": delta}]}
    last = {"id": "chatcmpl-big", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return [json.dumps(chunk, ensure_ascii=False), json.dumps(last)]


def _fresh(payloads: list[str]) -> list[str]:
    """New strings of the same payloads, as a run reads them from its recording: CPython keeps a
    string's UTF-8 once made (msgspec asks for it), so pushing the same non-ASCII string again
    would skip work that every real push does, on one side and not the other."""
    return [data if data.isascii() else data.encode().decode() for data in payloads]


def _cpu(pid: int | None) -> float:
    """CPU seconds of this process (every thread) and, on Linux, of process `pid` so far."""
    spent = time.process_time()
    if pid is not None:
        try:
            with open(f"/proc/{pid}/schedstat") as file:  # nanoseconds on a CPU
                spent += int(file.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return math.nan
    return spent


def _timed(driver: Driver, payloads: list[str]) -> tuple[float, float]:
    """`_once`, and the CPU time it took both sides (this process and the worker, if any)."""
    payloads = _fresh(payloads)
    pid = getattr(driver, "pid", None)
    before = _cpu(pid)
    wall = _once(driver, payloads, fresh=False)
    return wall, _cpu(pid) - before


def _once(driver: Driver, payloads: list[str], *, fresh: bool = True) -> float:
    payloads = _fresh(payloads) if fresh else payloads  # (not timed)
    started = time.perf_counter()
    driver.start_case()
    for line, data in enumerate(payloads, start=1):
        step = driver.push(data, line)
        assert "error" not in step, step
    done = driver.finish(False)
    completion = done["completion"]
    assert completion["content"] is not None or completion["tool_calls"], done
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,16", help="payload sizes in MiB (1,16)")
    parser.add_argument(
        "--shapes", default="plain", help=f"answer texts, of {','.join(SHAPES)} (plain)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="repeats per size (5)")
    parser.add_argument("--goal", type=float, default=2.0, help="seconds a worker may take (2)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a payload misses --goal")
    args = parser.parse_args(argv)
    sizes = [float(size) for size in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        parser.error(f"unknown shape {unknown[0]!r}; choose from {', '.join(SHAPES)}")
    in_process = InProcessDriver(load_target("reference:Assembler"))
    worker = python_target_driver("reference:Assembler", timeout=600)
    worker.start()
    print(f"{'':>20}  {'wall':-^32}  {'CPU, both sides':-^32}")
    head = f"{'in-process':>10}  {'worker':>10}  {'ratio':>6}"
    print(f"{'payload':>9}  {'text':>9}  {head}  {head}")
    missed = []
    try:
        for mib, shape in [(mib, shape) for shape in shapes for mib in sizes]:
            payloads = _payloads(int(mib * 2**20), shape)
            _once(worker, payloads)  # warm up both sides (imports, buffers)
            _once(in_process, payloads)
            inside, outside = [], []
            for _ in range(args.repeats):
                inside.append(_timed(in_process, payloads))
                outside.append(_timed(worker, payloads))
            a, b = (statistics.median(wall for wall, _ in runs) for runs in (inside, outside))
            c, d = (statistics.median(cpu for _, cpu in runs) for runs in (inside, outside))
            walls = f"{a:>9.4f}s  {b:>9.4f}s  {b / a:>5.2f}x"
            cpus = f"{c:>9.4f}s  {d:>9.4f}s  {d / c:>5.2f}x"
            print(f"{mib:>6g} MiB  {shape:>9}  {walls}  {cpus}", flush=True)
            if b > args.goal:
                missed.append(f"{mib:g} MiB {shape}: {b:.2f} s")
    finally:
        worker.close()
    if missed:
        print(f"goal of {args.goal:g} s missed at " + ", ".join(missed))
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
