"""A recording of a million payloads, in every mode: time linear in its length, memory bounded.

Generates, in a temporary suite (the files are large: about 480 MB of recording and 340 MB of
golden file per million payloads, so they are never committed), one llama-server-shaped recording
per size (`tests/tools/synth.py`) and its golden file, written a step at a time. Then, for each
mode and size, runs `conform run reference:Assembler --in-process --mode MODE` in a child process
and reports its wall time and peak resident memory (the child's own high-water mark), then the ratio
of the largest size to the smallest: linear time shows as a time ratio near the size ratio (10),
and bounded memory as peak RSS that does not grow with the recording. The target (issue 6): a
million payloads under 300 MB in every mode.

Run: `python benchmarks/scale.py` (`--help` for the options; the default sizes take a while:
use `--sizes 10000,100000` for a quick look).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.check.modes import MODES  # noqa: E402
from harness.suite.cases import Suite  # noqa: E402
from tests.tools import synth  # noqa: E402

LIMIT_MB = 300

# The child: one `conform run` in this interpreter, then its own peak RSS on stderr's last line.
# The peak is the kernel's high-water mark of the child's own memory (VmHWM): `ru_maxrss` would
# not do, as Linux carries the parent's peak over into a child across fork and exec.
_CHILD = """
import resource, sys
from harness.cli import main
try:
    main(sys.argv[1:], prog_name="conform")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
try:
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(f"peak-rss-kib {peak} exit {code}", file=sys.stderr)
"""


def measure(suite: Path, mode: str) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB, and the run's totals line."""
    command = [sys.executable, "-c", _CHILD, "run", "reference:Assembler", "--in-process"]
    command += ["--suite", str(suite), "--mode", mode, "-q"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - started
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if not last.startswith("peak-rss-kib ") or not last.endswith(" exit 0"):
        raise SystemExit(f"{mode} on {suite} failed:\n{done.stdout}\n{done.stderr}")
    return seconds, int(last.split()[1]) / 1024, done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="100000,1000000", help="payload counts, comma-separated (smallest first)"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="modes, comma-separated")
    parser.add_argument(
        "--keep", type=Path, help="build the suites here and keep them (reused when present)"
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    modes = [mode for mode in args.modes.split(",") if mode]
    with tempfile.TemporaryDirectory(prefix="conform-scale-") as scratch:
        root = args.keep or Path(scratch)
        print(f"suites (one case each) in {root}")
        for size in sizes:
            started = time.perf_counter()
            folder = root / str(size)
            kept = args.keep is not None and (folder / "golden" / "scale.json").is_file()
            if kept:
                [case] = Suite.open(folder).cases()  # built by an earlier run
            else:
                [case] = synth.write_suite(folder, {"scale": size}).cases()
            built = f"written in {time.perf_counter() - started:.0f} s" if not kept else "kept"
            recording_mb = case.recording.stat().st_size / 2**20
            golden_mb = case.golden.stat().st_size / 2**20
            print(
                f"  {size:>9,} payloads: recording {recording_mb:.0f} MB, "
                f"golden {golden_mb:.0f} MB ({built})"
            )
        header = "".join(f"{size:>12,} pl. {'peak':>8}" for size in sizes)
        print(f"\n{'mode':<15}{header}   time ratio  (size ratio {sizes[-1] / sizes[0]:.0f})")
        worst = 0.0
        for mode in modes:
            cells, times = [], []
            for size in sizes:
                seconds, peak, _ = measure(root / str(size), mode)
                worst = max(worst, peak)
                times.append(seconds)
                cells.append(f"{seconds:>14.1f} s {peak:>6.0f} MB")
            ratio = times[-1] / times[0]
            print(f"{mode:<15}{''.join(cells)}   {ratio:6.2f}", flush=True)
        verdict = "within" if worst < LIMIT_MB else "OVER"
        print(f"\nlargest peak RSS: {worst:.0f} MB, {verdict} the {LIMIT_MB} MB bound")


if __name__ == "__main__":
    main()
