"""Mutation testing of the reference: how many small bugs in `reference/` does the suite catch?

The reference mutated is the plain one (`reference.assembler` and the modules it reads payloads
with: `json_text`, `shape`, `openai`, `choices`, `types`), the executable form of docs/spec.md that
generates the golden files; the fast one (`reference.fast`) is held to it by
tests/assembler/test_differential.py instead.

Each mutant is the reference with one small change to its syntax tree (the operators below). It is
run in-process, as a target, against every shipped case in every mode, through the harness's own
`run_case`; the first failing run kills it. A mutant that passes every run *survives*: either it
behaves like the reference on every input the contract allows (*equivalent*, listed with a reason in
`tests/tools/mutation_equivalents.toml`) or the suite lacks a case. The script prints the score per
operator and every survivor that the equivalents file does not list, and exits 1 if there is one.

The implementation-defined points (I1 to I6): the reference is told its outcome at each point
(`Assembler(choices)`), and the golden files hold the outcome of every choice, made by the *real*
reference. So each mutant is run under the reference's own choices and under every other allowed
outcome of each point (one point changed at a time, the choices made with the mutant's own
`REFERENCE.replace`), and under each it must give the golden outcome of *those* choices
(`RunOptions(chosen_points=...)`), not just any allowed one: a bug on a path only another choice
takes (I3 `ignore`'s pruning, I2 `exact`) is a bug in what generates the golden alternatives. What a
mutant cannot be caught for is taking another allowed outcome *by default*: the choices are always
passed, so a changed default in `reference/choices.py` is an "I-point choice" equivalent.

Operators: `compare` (a comparison flipped: `==`/`!=`, `<`/`>=`, `is`/`is not`, `in`/`not in`),
`boundary` (`<`/`<=`, `>`/`>=`), `number` (an integer constant +1 and -1), `negate` (an `if` or
conditional expression's test negated), `and_or` (`and`/`or` swapped), `arith` (`+`/`-`),
`delete` (a statement replaced by `pass`, a `return x` by `return None`), `constant` (`True`/
`False` swapped, a string emptied, a number set to 0 or 1), `remove_condition` (an `if` test
replaced by `True`, an operand of `and`/`or` dropped).

Why a small AST mutator of our own rather than mutmut or cosmic-ray: both run the whole test
command once per mutant in a fresh process (seconds each, with the harness's start-up), and they
patch files on disk, which the parallel agents on this machine and the harness's own use of the
unmutated reference (the `truncated` mode asks it for the expected results under the outcome's
choices, `harness.check.runner`) rule out. Here each mutant is a fresh copy of the mutated module
and of every module importing it, compiled from a changed tree and loaded under a private name, so
the harness (its golden files, its truncated-mode expectations, its `reference.choices`) keeps the
real reference, nothing is written to disk, and a mutant costs one suite run per set of choices
that stops at its first failure. No dependency.

Run: `python tests/tools/mutate_reference.py` (`-j 2` by default; `--list` prints the mutants,
`--all-survivors` also prints the listed equivalents). Survivors are printed in the equivalents
file's TOML form, ready to be pasted there with a reason once judged equivalent.
"""

from __future__ import annotations

import argparse
import ast
import copy
import multiprocessing
import signal
import sys
import time
import tomllib
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness import MODES, RunOptions, Suite, run_case  # noqa: E402
from harness.drive.inprocess import InProcessDriver  # noqa: E402
from harness.suite.golden import read_golden  # noqa: E402
from reference.choices import OUTCOMES, REFERENCE  # noqa: E402

SEED = 20261129  # the CLI's default seed, so a kill reproduces with `conform run`
EQUIVALENTS = ROOT / "tests" / "tools" / "mutation_equivalents.toml"
#: The modules mutated, in import order (each imports only those before it). `__init__` only
#: re-exports names, and `fast` is held to the others by the differential test.
MODULES = ("types", "choices", "json_text", "openai", "shape", "assembler")
#: Module-level names not mutated. In `shape`, two that only name a type in an error message. In
#: `choices`, only the harness uses them (listing the points,
#: enumerating the combinations a golden file is built under), and the harness keeps the real
#: reference by design, so no run could ever tell a mutant of them. In `openai`, the list of
#: OpenAI's members with their types and sources: data, checked against its sources by
#: tests/check/test_known_fields.py (a case for each of its 40 members' every type and value is
#: not what this run measures); the code that reads it (`wrong_type`) is mutated.
_NOT_MUTATED = {
    "shape": {"_json_type", "_TYPE_NAMES"},
    "choices": {"TITLES", "combinations"},
    "openai": {
        "Member",
        "MEMBERS",
        "_CHUNK",
        "_CHOICE",
        "_DELTA",
        "_LOGPROB",
        "_TOP",
        "_USAGE",
        "_COMPLETION_DETAILS",
        "_PROMPT_DETAILS",
        "_AUDIO",
        "_OBFUSCATION",
        "_TOOL_CALL",
        "_FUNCTION_CALL",
        "_LOGPROBS",
        "SOURCES",
    },
}
#: The sets of choices each mutant runs under: the reference's own, then each other allowed
#: outcome of one point at a time (test_pins.py checks that a case's outcome moves with a point
#: only if the case pins it, so one point at a time reaches every alternative in the suite).
OWN = {point: getattr(REFERENCE, point) for point in OUTCOMES}
CONFIGS: tuple[dict[str, str], ...] = (
    OWN,
    *(OWN | {point: v} for point, values in OUTCOMES.items() for v in values if v != OWN[point]),
)
#: The run's settings under each of `CONFIGS`: that outcome required at every point.
OPTIONS = tuple(RunOptions(seed=SEED, chosen_points=tuple(c.items())) for c in CONFIGS)
#: Calls whose string arguments only make an error's message (not part of the contract).
_MESSAGE_CALLS = {
    "protocol",
    "InferError",
    "integer_of",
    "read_integer",
    "read_number",
    "number_value",
}
MUTANT_TIMEOUT = 60  # seconds; a mutant that hangs is killed (the harness would time it out)

_FLIP = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
    ast.LtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add}


@dataclass(frozen=True)
class Mutant:
    """One change to one module: where, which operator, and the code before and after."""

    module: str  # "assembler"
    number: int  # its index among the module's mutants
    operator: str
    lineno: int
    line: str  # the source line, stripped
    before: str
    after: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the equivalents file matches: stable while the line's code is unchanged."""
        return (f"reference/{self.module}.py", self.operator, self.line, self.after)


def _source(module: str) -> str:
    return (ROOT / "reference" / f"{module}.py").read_text(encoding="utf-8")


def _imports(module: str) -> set[str]:
    """The modules of `MODULES` that `module` imports (`from reference.X import ...`)."""
    return {
        node.module.split(".", 1)[1]
        for node in ast.walk(ast.parse(_source(module)))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("reference.")
        and node.module.split(".", 1)[1] in MODULES
    }


def _rebuilt(module: str) -> set[str]:
    """`module` and every module that imports it, directly or not."""
    rebuilt = {module}
    for name in MODULES[MODULES.index(module) + 1 :]:
        if _imports(name) & rebuilt:
            rebuilt.add(name)
    return rebuilt


def _short(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 100 else text[:97] + "..."


class _Sites(ast.NodeVisitor):
    """Every mutation of a tree, as (node path, operator, replacement maker)."""

    def __init__(self, module: str) -> None:
        self.found: list[tuple[ast.AST, str, Callable[[ast.AST], ast.AST | list[ast.stmt]]]] = []
        self.skip: set[int] = set()  # ids of constants that only make messages or slots
        self.in_code = 0  # inside a function or class body
        self.not_mutated = _NOT_MUTATED.get(module, set())

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                names = {stmt.name}
            else:
                targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
            if not names & self.not_mutated:
                self.visit(stmt)

    def add(self, node: ast.AST, operator: str, make: Callable[[Any], Any]) -> None:
        self.found.append((node, operator, make))

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name in _MESSAGE_CALLS:
            self.skip.update(
                id(a) for a in node.args if isinstance(a, ast.Constant | ast.JoinedStr)
            )
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        pass  # f-strings only make messages

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            return
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            for table, operator in ((_FLIP, "compare"), (_BOUNDARY, "boundary")):
                if type(op) in table:
                    new = table[type(op)]

                    def make(n: ast.Compare, i: int = i, new: type = new) -> ast.Compare:
                        n.ops[i] = new()
                        return n

                    self.add(node, operator, make)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        swapped = ast.Or if isinstance(node.op, ast.And) else ast.And

        def swap(n: ast.BoolOp) -> ast.BoolOp:
            n.op = swapped()
            return n

        self.add(node, "and_or", swap)
        for i in range(len(node.values)):

            def drop(n: ast.BoolOp, i: int = i) -> ast.expr:
                rest = n.values[:i] + n.values[i + 1 :]
                return rest[0] if len(rest) == 1 else ast.BoolOp(op=n.op, values=rest)

            self.add(node, "remove_condition", drop)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._arith(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._arith(node)
        self.generic_visit(node)

    def _arith(self, node: ast.BinOp | ast.AugAssign) -> None:
        if type(node.op) in _ARITH:
            new = _ARITH[type(node.op)]

            def make(n: Any) -> Any:
                n.op = new()
                return n

            self.add(node, "arith", make)

    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self.skip:
            return
        value = node.value
        if isinstance(value, bool):
            self.add(node, "constant", lambda n: ast.Constant(not value))
        elif isinstance(value, int):
            for delta in (1, -1):
                self.add(node, "number", lambda n, d=delta: ast.Constant(value + d))
            self.add(node, "constant", lambda n: ast.Constant(0 if value else 1))
        elif isinstance(value, float):
            self.add(node, "constant", lambda n: ast.Constant(0.0 if value else 1.0))
        elif isinstance(value, str):
            self.add(node, "constant", lambda n: ast.Constant("" if value else "mutant"))

    def _test(self, node: ast.If | ast.IfExp | ast.While) -> None:
        self.add(node, "negate", lambda n: _with_test(n, ast.UnaryOp(ast.Not(), n.test)))
        self.add(node, "remove_condition", lambda n: _with_test(n, ast.Constant(True)))

    def visit_If(self, node: ast.If) -> None:
        self._test(node)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._test(node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.in_code += 1
        self.generic_visit(node)
        self.in_code -= 1

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # A Struct's options (frozen, gc) change no result the contract can see: not mutated.
        self.skip.update(id(k.value) for k in node.keywords)
        self.in_code += 1
        self.generic_visit(node)
        self.in_code -= 1

    def generic_visit(self, node: ast.AST) -> None:
        # Statement deletion: every statement of a function or class body, except definitions,
        # docstrings and `__slots__` (module-level statements are definitions: deleting one only
        # makes a NameError).
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if self.in_code and isinstance(body, list):
                for stmt in body:
                    if isinstance(stmt, ast.stmt) and _deletable(stmt):
                        self._delete(stmt)
        super().generic_visit(node)

    def _delete(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Return):
            if node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None
            ):
                self.add(node, "delete", lambda n: ast.Return(ast.Constant(None)))
            return
        self.add(node, "delete", lambda n: ast.Pass())


def _deletable(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom | ast.Pass):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False  # a docstring
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return not any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets)


def _with_test(node: Any, test: ast.expr) -> Any:
    node.test = test
    return node


def mutants(module: str) -> Iterator[Mutant]:
    """Every mutant of `module` (`mutated_tree` builds its code)."""
    source = _source(module)
    lines = source.splitlines()
    sites = _Sites(module)
    sites.visit(ast.parse(source))
    for number, (node, operator, make) in enumerate(sites.found):
        before = _short(node)
        replacement = make(copy.deepcopy(node))
        after = "pass" if isinstance(replacement, ast.Pass) else _short(replacement)
        if after == before:
            continue
        line = lines[node.lineno - 1].strip()  # type: ignore[attr-defined]
        yield Mutant(module, number, operator, node.lineno, line, before, after)  # type: ignore[attr-defined]


def mutated_tree(mutant: Mutant) -> ast.Module:
    """The syntax tree of `mutant`'s module with its one change made."""
    source = _source(mutant.module)
    sites = _Sites(mutant.module)
    tree = ast.parse(source)
    sites.visit(tree)
    node, _, make = sites.found[mutant.number]
    replacement = make(node)
    if replacement is not node:
        _replace(tree, node, replacement)
    return ast.fix_missing_locations(tree)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[next(i for i, v in enumerate(value) if v is old)] = new
                return
    raise AssertionError("node not found")


class _Private(ast.NodeTransformer):
    """Points `from reference.X import` at the private copies of the modules being rebuilt."""

    def __init__(self, prefix: str, rebuilt: set[str]) -> None:
        self.prefix, self.rebuilt = prefix, rebuilt

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom:
        if node.module and node.module.startswith("reference."):
            name = node.module.split(".", 1)[1]
            if name in self.rebuilt:
                node.module = f"{self.prefix}.{name}"
        return node


def load_mutant(module: str, tree: ast.Module, tag: str) -> types.ModuleType:
    """The `assembler` module of the reference with `module` replaced by `tree`.

    The mutated module and every module importing it are compiled afresh under a private package
    name; the others are the real reference's, so the harness's own uses of it are untouched. The
    module returned holds the mutant's `Assembler` and the `REFERENCE` choices it imported.
    """
    prefix = f"_mutant_{tag}"
    rebuilt = _rebuilt(module)
    package = types.ModuleType(prefix)
    package.__path__ = []
    sys.modules[prefix] = package
    try:
        for name in MODULES:
            if name not in rebuilt:
                continue
            source_tree = tree if name == module else ast.parse(_source(name))
            source_tree = _Private(prefix, rebuilt).visit(source_tree)
            code = compile(ast.fix_missing_locations(source_tree), f"reference/{name}.py", "exec")
            mod = types.ModuleType(f"{prefix}.{name}")
            sys.modules[mod.__name__] = mod
            exec(code, mod.__dict__)
        return sys.modules[f"{prefix}.assembler"]
    finally:
        for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
            del sys.modules[name]


# --- running: one worker process holds the suite and its golden files ---

_RUNS: list[tuple[Any, dict[str, Any], str, int]] = []  # (case, golden, mode, config index)
_TRIED_FIRST: list[int] = []  # indexes into _RUNS of recent killers, most recent first
_MUTANTS: dict[str, dict[int, Mutant]] = {}  # a module's mutants, by number


def _init_worker() -> None:
    _RUNS.clear()
    suite = Suite.open(None)
    cases = [(case, read_golden(case)) for case in suite.cases()]
    # All cases in plain mode under the reference's own choices first (cheap, and most mutants die
    # there), then the cases that pin a point under its other outcomes, then the rest.
    _RUNS.extend((case, golden, MODES[0], 0) for case, golden in cases)
    later = []
    for config in range(1, len(CONFIGS)):
        (point,) = [p for p in OWN if CONFIGS[config][p] != OWN[p]]
        for case, golden in cases:
            pinned = point in golden.get("pins", ())
            for mode in MODES:
                (_RUNS if pinned and mode == MODES[0] else later).append(
                    (case, golden, mode, config)
                )
    for mode in MODES[1:]:
        _RUNS.extend((case, golden, mode, 0) for case, golden in cases)
    _RUNS.extend(later)


def _describe(config: int) -> str:
    """How a run's choices are shown: nothing for the reference's own, else the point changed."""
    return "".join(f", {p}={v}" for p, v in CONFIGS[config].items() if v != OWN[p])


class _Hung(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hung


def _kill(job: tuple[str, int]) -> tuple[str, int, str | None]:
    """Run one mutant; the run that killed it ("case [mode]: why"), or None if it survived."""
    module, number = job
    if module not in _MUTANTS:  # each worker lists a module's mutants once
        _MUTANTS[module] = {m.number: m for m in mutants(module)}
    tree = mutated_tree(_MUTANTS[module][number])
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(MUTANT_TIMEOUT)
    try:
        try:
            loaded = load_mutant(module, tree, f"{module}_{number}")
        except Exception as exc:  # a mutant that does not even load is killed
            return module, number, f"(import): {type(exc).__name__}: {exc}"
        drivers: dict[int, InProcessDriver] = {}
        for config, choices in enumerate(CONFIGS):
            try:  # told its choices as the harness tells the real reference (golden.py)
                chosen = loaded.REFERENCE.replace(choices)
            except Exception as exc:  # it refuses an allowed outcome
                return module, number, f"(choices{_describe(config)}): {type(exc).__name__}"
            drivers[config] = InProcessDriver(lambda chosen=chosen: loaded.Assembler(chosen))
        order = _TRIED_FIRST + [i for i in range(len(_RUNS)) if i not in _TRIED_FIRST]
        for index in order:
            case, golden, mode, config = _RUNS[index]
            try:
                result = run_case(case, golden, drivers[config], mode=mode, options=OPTIONS[config])
                status = result.status
            except Exception as exc:  # e.g. the harness rejecting a result
                status = f"error {type(exc).__name__}"
            if status != "passed":
                if index in _TRIED_FIRST:
                    _TRIED_FIRST.remove(index)
                _TRIED_FIRST.insert(0, index)
                del _TRIED_FIRST[8:]
                return module, number, f"{case.case_id} [{mode}{_describe(config)}]: {status}"
        return module, number, None
    except _Hung:
        return module, number, f"(timeout after {MUTANT_TIMEOUT} s)"
    finally:
        signal.alarm(0)


def read_equivalents(path: Path) -> dict[tuple[str, str, str, str], str]:
    """The equivalents file: each listed survivor's key and the reason it is equivalent."""
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {
        (e["module"], e["operator"], e["line"], e["mutation"]): e["reason"]
        for e in data.get("equivalent", [])
    }


def _toml(mutant: Mutant, reason: str) -> str:
    module, operator, line, after = mutant.key

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (
        f"[[equivalent]]  # line {mutant.lineno}: {mutant.before}\n"
        f"module = {q(module)}\noperator = {q(operator)}\nline = {q(line)}\n"
        f"mutation = {q(after)}\nreason = {q(reason)}\n"
    )


def _line_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        found = int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST-LAST (line numbers)") from None
    if found[0] > found[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: the first line is after the last")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--all-survivors", action="store_true", help="print listed ones too")
    parser.add_argument("--module", choices=MODULES, action="append", help="only these modules")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    parser.add_argument(
        "--lines",
        type=_line_range,
        metavar="FIRST-LAST",
        help="only mutants on these lines (with one --module: a function just changed)",
    )
    args = parser.parse_args(argv)

    chosen = args.module or list(MODULES)
    every = {(m.module, m.number): m for name in chosen for m in mutants(name)}
    if args.lines is not None:
        first, last = args.lines
        every = {key: m for key, m in every.items() if first <= m.lineno <= last}
    if args.list:
        for m in every.values():
            print(f"{m.module}:{m.lineno} {m.operator}: {m.before}  ->  {m.after}")
        print(f"{len(every)} mutants")
        return 0
    equivalents = read_equivalents(args.equivalents)
    started = time.perf_counter()
    context = multiprocessing.get_context("fork")
    killed_by: dict[tuple[str, int], str | None] = {}
    with context.Pool(args.jobs, initializer=_init_worker) as pool:
        for module, number, killer in pool.imap_unordered(_kill, list(every), chunksize=4):
            killed_by[(module, number)] = killer
    elapsed = time.perf_counter() - started

    total, killed = Counter[str](), Counter[str]()
    survivors = []
    for key, mutant in every.items():
        total[mutant.operator] += 1
        if killed_by[key] is None:
            survivors.append(mutant)
        else:
            killed[mutant.operator] += 1
    listed = [m for m in survivors if m.key in equivalents]
    new = [m for m in survivors if m.key not in equivalents]
    stale = set(equivalents) - {m.key for m in survivors}
    if args.lines is not None or args.module:  # a part of the mutants: only theirs can be stale
        stale &= {m.key for m in every.values()}

    for mutant in listed if args.all_survivors else []:
        print(_toml(mutant, equivalents[mutant.key]))
    for mutant in new:
        print(_toml(mutant, "SURVIVED: equivalent? or a missing case"))
    for key in sorted(stale):
        print(f"note: listed as equivalent but killed or gone: {' | '.join(key)}")
    print("operator           killed / total")
    for operator in sorted(total):
        print(f"  {operator:16} {killed[operator]:4} / {total[operator]}")
    score = sum(killed.values())
    count = sum(total.values())
    print(
        f"mutants: {count}, killed {score}, equivalent {len(listed)}, "
        f"surviving non-equivalent {len(new)}; "
        f"score {score}/{count - len(listed)} non-equivalent "
        f"({100 * score / max(count - len(listed), 1):.1f}%); "
        f"{elapsed:.0f} s with {args.jobs} worker(s)"
    )
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
