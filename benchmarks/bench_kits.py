"""The adapter kits' protocol, before and after: `conform run --exec` of the Go, Rust and JavaScript
examples built from another git revision (`--before`, default `main`) and from this checkout.

    python benchmarks/bench_kits.py [--before REF] [--repeats 3] [--only go,rust,js] [--mode M]
                                    [--matrix]

Each run is `conform run --exec PROGRAM -q --json FILE` over the shipped suite (every mode unless
`--mode`), in this checkout, wrapped to report the CPU seconds of conform itself (the harness) and
of the program it waited for. The two builds of an example run side by side, alternating, and the
script prints medians and the ratio after/before of each figure. It also checks that both builds
give every case and mode the same status (the results must not change), and exits 1 when they
do not. For scale it also runs conform's own Python worker (`reference:Assembler`, protocol 4)
over the same cases, whose harness CPU is what the kits' protocol is measured against. With
`--matrix` it also times `conform matrix` over the chosen examples, the old builds
against the new. Builds: go (examples/go), cargo offline against Debian's crates (examples/rust),
node.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conform"

#: Runs `conform` (its arguments follow) and writes, at exit, the CPU seconds of this process (the
#: harness) and of the program it waited for.
_RUSAGE = """
import resource, sys
from harness.cli import main
try:
    main(sys.argv[1:], prog_name="conform")
finally:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print("conform-cpu", *(u.ru_utime + u.ru_stime for u in (own, kids)), file=sys.stderr)
"""


def export(ref: str, folder: Path) -> Path:
    """`examples/` of git revision `ref`, written below `folder`."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "examples"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    tar = folder / "examples.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as bundle:
        bundle.extractall(folder, filter="data")
    return folder / "examples"


def commands(examples: Path, name: str, folder: Path, only: list[str]) -> dict[str, list[str]]:
    """The command line of each example in `examples`, building the Go and Rust ones."""
    found: dict[str, list[str]] = {}
    if "go" in only:
        go = folder / f"conform-go-{name}"
        subprocess.run(["go", "build", "-o", str(go), "."], cwd=examples / "go", check=True)
        found["go"] = [str(go)]
    if "rust" in only:
        cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
        target = CACHE / "rust-target" / f"bench-kits-{name}"
        env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
        build = [cargo, "build", "--offline", "--release", "--quiet"]
        subprocess.run(build, cwd=examples / "rust", env=env, check=True)
        rust = folder / f"conform-rust-{name}"
        shutil.copy2(target / "release" / "conform-rust-example", rust)
        found["rust"] = [str(rust)]
    if "js" in only:
        found["js"] = ["node", str(examples / "js" / "assembler.mjs")]
    clients = examples / "clients" / "node"
    for client in ("openai-node", "vercel-ai"):  # built on the JavaScript kit too
        if client in only:
            modules = ROOT / "examples" / "clients" / "node" / "node_modules"  # (npm ci there)
            if not (clients / "node_modules").exists():
                (clients / "node_modules").symlink_to(modules)
            found[client] = ["node", str(clients / f"{client}.mjs")]
    return found


def run(program: list[str], report: Path, modes: list[str]) -> tuple[float, float, float, dict]:
    """One `conform run --exec`: wall seconds, harness CPU, program CPU, and each run's status."""
    return timed(["run", "--exec", " ".join(program), "-q", "--json", str(report)], report, modes)


def timed(arguments: list[str], report: Path, modes: list[str]) -> tuple[float, float, float, dict]:
    """`conform ARGUMENTS`: wall seconds, harness CPU, programs' CPU, and each run's status."""
    command = [sys.executable, "-c", _RUSAGE, *arguments, "--timeout", "60"]
    command += [arg for mode in modes for arg in ("--mode", mode)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    line = next(x for x in reversed(done.stderr.splitlines()) if x.startswith("conform-cpu "))
    harness, program_cpu = (float(x) for x in line.split()[1:])
    found = json.loads(report.read_text(encoding="utf-8"))
    results = found.get("results", [])  # (none in a matrix report)
    statuses = {(r["case"], r["mode"]): r["status"] for r in results}
    return wall, harness, program_cpu, statuses


def matrix(programs: dict[str, list[str]], report: Path, modes: list[str]) -> tuple[float, ...]:
    """`conform matrix` over `programs`: wall seconds, harness CPU, programs' CPU."""
    columns = [a for name, p in programs.items() for a in ("--exec", f"{name}={' '.join(p)}")]
    return timed(["matrix", *columns, "--json", str(report)], report, modes)[:3]


def show(name: str, before: list[tuple[float, ...]], after: list[tuple[float, ...]]) -> None:
    """Medians of wall, harness CPU and programs' CPU, before and after, and their ratios."""
    for i, figure in enumerate(("wall s", "harness CPU s", "program CPU s")):
        old = statistics.median(f[i] for f in before)
        new = statistics.median(f[i] for f in after)
        print(f"{name:8} {figure:13} {old:8.2f} {new:8.2f} {new / old:12.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="git revision of the old kits")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--only",
        default="go,rust,js",
        help="examples, comma-separated: go, rust, js, and the clients openai-node, vercel-ai",
    )
    parser.add_argument("--mode", action="append", default=[], help="input mode (repeatable)")
    parser.add_argument("--matrix", action="store_true", help="also time conform matrix")
    parser.add_argument("--worker", default="reference:Assembler", help="Python target for scale")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    same = True
    with tempfile.TemporaryDirectory(prefix="conform-bench-kits-") as scratch:
        folder = Path(scratch)
        before = commands(export(args.before, folder), "before", folder, only)
        after = commands(ROOT / "examples", "after", folder, only)
        print(f"before = {args.before}, after = this checkout; medians of {args.repeats}")
        print(f"{'example':8} {'figure':13} {'before':>8} {'after':>8} {'after/before':>12}")
        for name in only:
            figures: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": []}
            statuses: dict[str, dict] = {}
            for _ in range(args.repeats):
                for side, program in (("before", before[name]), ("after", after[name])):
                    wall, harness, cpu, got = run(program, folder / "report.json", args.mode)
                    figures[side].append((wall, harness, cpu))
                    statuses.setdefault(side, got)
            show(name, figures["before"], figures["after"])
            old_status, new_status = statuses["before"], statuses["after"]
            changed = [k for k in old_status if old_status[k] != new_status.get(k)]
            if changed or statuses["before"].keys() != statuses["after"].keys():
                same = False
                print(f"{name:8} results CHANGED in {len(changed)} runs, e.g. {changed[:3]}")
            else:
                counts: dict[str, int] = {}
                for status in statuses["after"].values():
                    counts[status] = counts.get(status, 0) + 1
                print(f"{name:8} results   the same in all {len(statuses['after'])} runs {counts}")
        report = folder / "worker.json"
        alone = ["run", args.worker, "-q", "--json", str(report)]
        worker = [timed(alone, report, args.mode) for _ in range(args.repeats)]
        shown = ", ".join(
            f"{figure} {statistics.median(w[i] for w in worker):.2f}"
            for i, figure in enumerate(("wall s", "harness CPU s", "worker CPU s"))
        )
        print(f"python worker ({args.worker}, protocol 4): {shown}")
        if args.matrix:
            report = folder / "matrix.json"
            sides: dict[str, list[tuple[float, ...]]] = {"before": [], "after": []}
            for _ in range(args.repeats):
                sides["before"].append(matrix(before, report, args.mode))
                sides["after"].append(matrix(after, report, args.mode))
            show("matrix", sides["before"], sides["after"])
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
