"""What installing conform costs each pytest start: a trivial run with and without the plugin.

Runs `python -m pytest -q -p no:cacheprovider` over one trivial test in a scratch folder, N times
each with the plugin (as installed) and with `-p no:conform`, alternating, and prints the medians.
tests/cli/test_plugin_idle.py checks the reason the two are alike: the idle plugin imports no
harness module beyond its entry point.

Run: `python benchmarks/bench_plugin_start.py [N]` (default 15).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def start(folder: Path, *options: str) -> float:
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - began


def import_cost(runs: int) -> float:
    """The plugin's own import time, as `-X importtime` reports it, in a process with pytest."""
    costs = []
    for _ in range(runs):
        lines = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import pytest; import harness.plugin"],
            check=True,
            capture_output=True,
            text=True,
        ).stderr.splitlines()
        total = next(line for line in lines if line.rstrip().endswith("| harness.plugin"))
        costs.append(int(total.split("|")[1]) / 1e6)
    return statistics.median(costs)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        start(folder)  # warm the file cache
        with_plugin: list[float] = []
        without: list[float] = []
        for _ in range(runs):
            with_plugin.append(start(folder))
            without.append(start(folder, "-p", "no:conform"))
    a, b = statistics.median(with_plugin), statistics.median(without)
    print(f"importing harness.plugin after pytest: {import_cost(runs) * 1000:.1f} ms (median)")
    print(
        f"pytest start, median of {runs}: with conform's plugin {a * 1000:.0f} ms, "
        f"with -p no:conform {b * 1000:.0f} ms, difference {(a - b) * 1000:+.0f} ms"
    )


if __name__ == "__main__":
    main()
