"""Mutation testing of the harness: how many small bugs in `harness/` do the project's tests catch?

The modules where a silent bug would make conform pass a wrong implementation are mutated, one
small change at a time, with the operators of `tests/tools/mutate_reference.py` (the same AST
mutator). The killer is the project's own tests: each module has a fast subset of test files
(`KILLERS`), run with `pytest -x`; a mutant that fails a test is killed, one whose tests all pass
*survives*: it is equivalent (listed with a reason in
`tests/tools/harness_mutation_equivalents.toml`, as the reference's are in
`mutation_equivalents.toml`) or a test is missing.

How a mutant runs: each worker keeps a shadow copy of the `harness` package (with the suite's
folders linked beside it, where the package looks for them). The mutated module is written there
(from its changed syntax tree), and a process forked from the worker (which imported pytest and
the other libraries once, but no harness module) runs the test subset with the shadow copy first
on `sys.path` and on `PYTHONPATH`, from a scratch folder: the tests' own imports, and the worker
processes and `--exec` programs they start, all get the mutant; the real tree is never touched.
Strings that only make messages (f-strings, an error's arguments, a hint) are not mutated.

Run: `python tests/tools/mutate_harness.py` (`-j 2`; `--module runner` for one module, `--list`
for the mutants, `--fraction 0.1` for a stable sample of about a tenth of them). Prints each
survivor in the equivalents file's TOML form and the score per module; exits 1 if a survivor is
not listed.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib.util
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "mutate_reference", ROOT / "tests" / "tools" / "mutate_reference.py"
)
assert _spec is not None and _spec.loader is not None
_mr = importlib.util.module_from_spec(_spec)
sys.modules["mutate_reference"] = _mr
_spec.loader.exec_module(_mr)

EQUIVALENTS = ROOT / "tests" / "tools" / "harness_mutation_equivalents.toml"
#: The modules mutated, and the test files that must kill their mutants (fast ones, killers first).
KILLERS: dict[str, tuple[str, ...]] = {
    "harness/check/status.py": (
        "tests/check/test_xfail.py",
        "tests/check/test_runner.py",
        "tests/reports/test_reports.py",
    ),
    "harness/check/compare.py": (
        "tests/check/test_compare.py",
        "tests/check/test_xfail.py",
        "tests/reports/test_reports.py",
    ),
    "harness/check/runner.py": (
        "tests/check/test_runner.py",
        "tests/test_api.py",
        "tests/check/test_compare.py",
        "tests/suite/test_pins.py",
        "tests/check/test_parallel.py",
        "tests/check/test_xfail.py",
        "tests/suite/golden/test_stream.py",
        "tests/check/test_modes.py",
    ),
    "harness/check/passes.py": (
        "tests/check/test_runner.py",
        "tests/check/test_compare.py",
        "tests/check/test_modes.py",
        "tests/suite/golden/test_stream.py",
    ),
    "harness/check/truncation.py": (
        "tests/check/test_modes.py",
        "tests/check/test_runner.py",
    ),
    "harness/drive/normalize.py": (
        "tests/drive/test_normalize.py",
        "tests/test_api.py",
        "tests/worker/test_program.py",
    ),
    "harness/suite/golden/store.py": (
        "tests/suite/golden/test_store.py",
        "tests/suite/golden/test_errors.py",
        "tests/suite/test_malformed_suites.py",
        "tests/suite/golden/test_stream.py",
        "tests/cli/test_cli.py",
    ),
    "harness/check/xfail.py": (
        "tests/check/test_xfail.py",
        "tests/cli/test_baselines_and_suites.py",
    ),
    "harness/check/modes.py": (
        "tests/check/test_mode_outputs.py",
        "tests/check/test_modes.py",
        "tests/check/test_known_fields.py",
    ),
    "harness/check/jsontext.py": (
        "tests/check/test_mode_outputs.py",
        "tests/check/test_modes.py",
    ),
}
#: Slow tests left out of every subset (each has faster tests of the same code in the subsets).
DESELECT = "not test_two_jobs_give_the_same_json_report_as_one"
SHORT = {Path(path).stem: path for path in KILLERS}
MUTANT_TIMEOUT = 120  # seconds for one mutant's tests; a mutant that hangs them is killed
#: Calls whose string arguments only make a message; keyword arguments that only make one.
_MESSAGE_CALL_SUFFIXES = ("Error", "Crash", "Timeout", "_stale", "_broken", "_garbage")
_MESSAGE_KEYWORDS = {"hint", "help", "reason", "message"}


@dataclass(frozen=True)
class Mutant:
    """One change to one module: where, which operator, and the code before and after."""

    path: str  # "harness/check/runner.py"
    number: int
    operator: str
    lineno: int
    line: str
    before: str
    after: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the equivalents file matches: stable while the line's code is unchanged."""
        return (self.path, self.operator, self.line, self.after)


class _Sites(_mr._Sites):  # type: ignore[misc, name-defined]
    """The reference mutator's sites, less the strings that only make messages."""

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name.endswith(_MESSAGE_CALL_SUFFIXES):
            self.skip.update(id(a) for a in node.args if isinstance(a, ast.Constant))
        for keyword in node.keywords:
            if keyword.arg in _MESSAGE_KEYWORDS and isinstance(keyword.value, ast.Constant):
                self.skip.add(id(keyword.value))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            self.skip.update(
                id(n)
                for n in ast.walk(node.exc)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        self.generic_visit(node)

    def _skip_all(self, nodes: list[Any]) -> None:
        for tree in nodes:
            if tree is not None:
                self.skip.update(id(n) for n in ast.walk(tree) if isinstance(n, ast.Constant))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._skip_all([node.annotation])
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # Decorators and annotations change no behaviour the tests can see (annotations are
        # strings here, `from __future__ import annotations`).
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        self._skip_all([*node.decorator_list, node.returns, *(a.annotation for a in arguments)])
        super().visit_FunctionDef(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._skip_all(node.decorator_list)
        super().visit_ClassDef(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        pass  # an assert only guards the harness's own invariants


def _sites(source: str) -> tuple[ast.Module, list[Any]]:
    tree = ast.parse(source)
    sites = _Sites("")  # no module-specific exclusions in the harness
    sites.visit(tree)
    return tree, sites.found


def mutants(path: str) -> Iterator[Mutant]:
    """Every mutant of the module at `path` (relative to the repository)."""
    source = (ROOT / path).read_text(encoding="utf-8")
    lines = source.splitlines()
    _, found = _sites(source)
    for number, (node, operator, make) in enumerate(found):
        before = _mr._short(node)
        replacement = make(copy.deepcopy(node))
        after = "pass" if isinstance(replacement, ast.Pass) else _mr._short(replacement)
        if after == before:
            continue
        yield Mutant(
            path, number, operator, node.lineno, lines[node.lineno - 1].strip(), before, after
        )


def mutated_source(mutant: Mutant) -> str:
    """The module's source with the mutant's one change made (comments are lost)."""
    tree, found = _sites((ROOT / mutant.path).read_text(encoding="utf-8"))
    node, _, make = found[mutant.number]
    replacement = make(node)
    if replacement is not node:
        _mr._replace(tree, node, replacement)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# --- running: each worker has a shadow copy of the package, and forks one process a mutant ---

_SHADOW: Path | None = None
_SCRATCH: Path | None = None


def _init_worker(scratch_root: str) -> None:
    global _SHADOW, _SCRATCH
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Libraries the tests import, loaded once here (never a harness or tests module).
    for name in (
        "pytest",
        "click",
        "click.testing",
        "deepdiff",
        "msgspec",
        "httpx",
        "jsonschema",
    ):  # not hypothesis, nor another pytest plugin: pytest must import those itself
        with contextlib.suppress(ImportError):
            __import__(name)
    _SHADOW = Path(tempfile.mkdtemp(prefix="worker-", dir=scratch_root))
    shutil.copytree(
        ROOT / "harness", _SHADOW / "harness", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("recordings", "golden", "examples"):
        (_SHADOW / name).symlink_to(ROOT / name)
    _SCRATCH = _SHADOW / "scratch"
    _SCRATCH.mkdir()


def _run_tests(files: tuple[str, ...]) -> int:
    """In a forked process: the tests, with the shadow package first. pytest's exit status."""
    assert _SHADOW is not None and _SCRATCH is not None
    os.chdir(_SCRATCH)
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(_SHADOW), str(ROOT)])
    sys.path[:0] = [str(_SHADOW), str(ROOT)]  # the mutant, then this checkout's tests/
    # The reference's mutator (whose operators this script borrows) imported the real harness,
    # and a process that ran tests before (the test of this script) holds test modules imported
    # by their bare names (`test_compare`), bound to the real harness: all are imported afresh.
    ours = (str(ROOT / "harness"), str(ROOT / "tests"))
    for name, module in list(sys.modules.items()):
        where = str(getattr(module, "__file__", None) or "")
        if name.split(".")[0] in ("harness", "tests") or where.startswith(ours):
            del sys.modules[name]
    if not os.environ.get("MUTATE_SHOW_TESTS"):  # set it to see the tests' output
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    import pytest

    args = [str(ROOT / f) for f in files]
    # -n 0: in this forked process, not in xdist workers (pyproject's addopts has -n auto).
    options = ["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly"]
    return int(pytest.main([*args, *options, f"--rootdir={ROOT}"]))


def _kill(job: tuple[str, int, tuple[str, ...] | None]) -> tuple[str, int, str | None, float]:
    """Run one mutant's tests: (path, number, why it was killed or None, seconds)."""
    path, number, files = job
    assert _SHADOW is not None
    started = time.perf_counter()
    target = _SHADOW / path
    original = (ROOT / path).read_text(encoding="utf-8")
    mutant = next(m for m in mutants(path) if m.number == number) if number >= 0 else None
    try:
        target.write_text(original if mutant is None else mutated_source(mutant), encoding="utf-8")
    except Exception as exc:  # a mutant that cannot be written is killed
        return path, number, f"(unparse) {exc}", 0.0
    child = os.fork()
    if child == 0:
        status = 3
        try:
            status = _run_tests(files or KILLERS[path])
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(status)
    deadline = time.monotonic() + MUTANT_TIMEOUT
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            target.write_text(original, encoding="utf-8")
            return (
                path,
                number,
                f"(timeout after {MUTANT_TIMEOUT} s)",
                time.perf_counter() - started,
            )
        time.sleep(0.02)
    target.write_text(original, encoding="utf-8")
    code = os.waitstatus_to_exitcode(status)
    killer = None if code == 0 else f"pytest exit {code}"
    return path, number, killer, time.perf_counter() - started


def _sampled(mutant: Mutant, fraction: float) -> bool:
    return zlib.crc32(repr(mutant.key).encode()) % 10_000 < fraction * 10_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--module", choices=sorted(SHORT), action="append", help="only these")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--fraction",
        type=float,
        default=1.0,
        help="a sample: each mutant is kept or not by a hash of its line and change, so two "
        "runs over different tests (before and after) sample the same mutants",
    )
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    parser.add_argument("--all-survivors", action="store_true", help="print listed ones too")
    args = parser.parse_args(argv)

    chosen = [SHORT[m] for m in args.module] if args.module else list(KILLERS)
    every: dict[tuple[str, int], Mutant] = {}
    for path in chosen:
        found = [m for m in mutants(path) if _sampled(m, args.fraction)]
        every.update({(m.path, m.number): m for m in found})
    if args.list:
        for m in every.values():
            print(f"{m.path}:{m.lineno} {m.operator}: {m.before}  ->  {m.after}")
        print(f"{len(every)} mutants")
        return 0

    equivalents = _mr.read_equivalents(args.equivalents)
    started = time.perf_counter()
    context = multiprocessing.get_context("fork")
    killed_by: dict[tuple[str, int], str | None] = {}
    scratch = tempfile.TemporaryDirectory(prefix="conform-mutants-")
    with scratch, context.Pool(args.jobs, _init_worker, (scratch.name,)) as pool:
        # First the unmutated package: its tests must pass, or no kill means anything.
        for path, _, killer, _ in pool.imap_unordered(_kill, [(p, -1, None) for p in chosen]):
            if killer is not None:
                print(f"the unmutated {path} fails its own tests ({killer}): fix that first")
                return 2
        jobs = [(m.path, m.number, None) for m in every.values()]
        for done, (path, number, killer, _) in enumerate(pool.imap_unordered(_kill, jobs), 1):
            killed_by[(path, number)] = killer
            if done % 10 == 0 or done == len(jobs):
                print(f"{done}/{len(jobs)} mutants run", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started

    total, killed, listed_count = Counter[str](), Counter[str](), Counter[str]()
    new: list[Mutant] = []
    for key, mutant in every.items():
        total[mutant.path] += 1
        if killed_by[key] is not None:
            killed[mutant.path] += 1
        elif mutant.key in equivalents:
            listed_count[mutant.path] += 1
            if args.all_survivors:
                print(_mr._toml(mutant, equivalents[mutant.key]))
        else:
            new.append(mutant)
    for mutant in new:
        print(_mr._toml(mutant, "SURVIVED: equivalent? or a missing test"))
    print("module                          killed / non-equivalent (equivalent)")
    for path in chosen:
        scored = total[path] - listed_count[path]
        share = 100 * killed[path] / max(scored, 1)
        print(f"  {path:30} {killed[path]:4} / {scored:<4} ({listed_count[path]})  {share:5.1f}%")
    score, count = sum(killed.values()), sum(total.values()) - sum(listed_count.values())
    print(
        f"mutants: {sum(total.values())}, killed {score}, equivalent {sum(listed_count.values())}, "
        f"surviving non-equivalent {len(new)}; score {100 * score / max(count, 1):.1f}%; "
        f"{elapsed:.0f} s with {args.jobs} worker(s)"
    )
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
