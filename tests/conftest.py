"""Shared test support: `invoke`/`conform`, the one way tests run the `conform` command in-process;
the project's own suite, a scratch copy of it and the three-case `mini` suite; the check that no
process started by the test run outlives it; how the xdist workers share the run (the slowest
tests first, a cold bytecode cache filled by all of them at once)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import os
import shutil
import sys
import time
import traceback
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.suite.cases import Suite
from tests.ci_rules import pytest_runtest_makereport  # noqa: F401 (a hook: nothing skips in CI)
from tests.programs.mini_suite import write_mini_suite

ROOT = Path(__file__).resolve().parent.parent

#: The long fuzzers (atheris, run by hand: docs/contributing.md) are programs, not tests.
collect_ignore_glob = ["fuzz/fuzz_*.py"]


def keep_bytecode(environ: MutableMapping[str, str]) -> None:
    """Under PYTHONDONTWRITEBYTECODE, let the processes this run starts (xdist workers, conform's
    workers, inner pytest runs) keep their bytecode in a cache folder outside the tree instead.

    Without it each of those hundreds of processes compiles harness/ and reference/ again, and each
    pytest process rewrites the asserts of every test module and of every plugin's package
    (hypothesis, langsmith) again: 5 s of CPU to collect the suite instead of 2, 0.1 s more per
    worker started. The variable's point, no bytecode files in the source tree, still holds.
    """
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conform" / "pycache"
    environ["PYTHONPYCACHEPREFIX"] = str(cache)
    del environ["PYTHONDONTWRITEBYTECODE"]


keep_bytecode(os.environ)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`--snapshot-update` runs in one process: syrupy deletes the golden files no test of its
    process used, so each xdist worker would delete the others' (pyproject's addopts has `-n`)."""
    if config.getoption("--snapshot-update", default=False) and hasattr(config.option, "dist"):
        config.option.numprocesses = 0
        config.option.dist = "no"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts) starts one worker more than there are cores.

    About 25 s of the run is spent waiting, not computing (timeouts and sleeps that the drive and
    hostile tests need, programs starting): a worker that waits holds no core, and the extra
    worker runs on it meanwhile. On 2 cores that is about a fifth less wall time for the same CPU
    (measured side by side, alternating: tests/drive, check and hostile take 36.5 s at 3 workers
    against 44.6 s at 2, medians of 4). PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


#: The slowest tests (or files), each with about the seconds it takes on a loaded 2-core machine
#: (`pytest --durations`): an xdist worker starts them before the rest, spread over the workers
#: (`arrange`), so that no long test starts last, or waits behind another, while the other workers
#: idle. Each entry is one unit, kept on one worker: a file whose tests share a module fixture (an
#: example built once) is one entry; tests that share nothing (the client adapters) are one entry
#: each. tests/test_conftest.py checks that each entry names an existing test.
_CLIENTS = "tests/integration/test_clients.py::test_the_adapter_fails_exactly_its_baseline"
_CAREFUL = (
    "tests/check/test_fairness.py::"
    "test_a_careful_client_passes_every_mode_and_fails_strict_only_where_pinned"
)
HEAVY: tuple[tuple[str, float], ...] = (
    (f"{_CLIENTS}[vercel-ai]", 101),
    (f"{_CLIENTS}[litellm]", 96),
    (f"{_CLIENTS}[pydantic-ai]", 73),
    (f"{_CLIENTS}[langchain]", 69),
    (
        "tests/reports/test_hostile_reports.py::"
        "test_a_hostile_target_goes_through_every_report_with_exit_1_then_0",
        61,
    ),
    (f"{_CLIENTS}[openai-node]", 47),
    ("tests/integration/test_js_example.py", 43),
    ("tests/reports/test_problems.py::test_one_bug_is_one_problem_however_many_runs_it_fails", 37),
    ("tests/integration/test_clients_action.py", 30),
    ("tests/integration/test_differential.py", 29),
    ("tests/integration/test_go_example.py", 27),
    (f"{_CLIENTS}[openai-python]", 26),
    ("tests/tools/test_mutate_harness.py", 26),
    (f"{_CAREFUL}[I6]", 23),
    (f"{_CAREFUL}[I5]", 23),
    ("tests/integration/test_examples_python.py", 23),
    ("tests/check/test_batched.py", 17),
    ("tests/check/test_modes.py::test_results_are_deterministic_from_the_seed", 17),
    ("tests/assembler/test_properties.py::test_completion_texts_are_the_events_texts", 17),
    ("tests/check/test_mode_outputs.py::test_odd_texts_are_changed_as_before", 13),
    ("tests/integration/test_rust_example.py", 13),
    (
        "tests/check/test_mode_outputs.py::"
        "test_every_case_of_the_shipped_suite_is_changed_as_before",
        12,
    ),
    ("tests/cli/test_fuzz.py::test_the_reference_is_never_flagged", 11),
    (
        "tests/integration/test_miniatures.py::test_the_reference_passes_every_case_in_every_mode",
        10,
    ),
    (
        "tests/check/test_modes.py::"
        "test_the_reference_under_each_choice_gives_that_choices_outcome_in_every_mode",
        9,
    ),
    ("tests/worker/test_forkserver.py::test_restarts_and_jobs_fork_from_one_import", 9),
    (
        "tests/check/test_xfail.py::"
        "test_a_baseline_makes_a_broken_target_pass_until_one_case_is_fixed",
        9,
    ),
    ("tests/check/test_modes.py::test_the_reference_passes_every_case_in_every_mode", 7),
    (
        "tests/integration/test_miniatures.py::"
        "test_a_target_that_rejects_unknown_fields_passes_plain_and_fails_unknown_fields",
        7,
    ),
    ("tests/check/test_parallel.py::test_two_jobs_give_the_same_json_report_as_one", 7),
    ("tests/reports/test_matrix_page.py", 6),
    ("tests/integration/test_miniatures.py::test_the_real_client_helpers_alone_pass", 4),
)
HEAVY_FIRST = tuple(prefix for prefix, _ in HEAVY)


def heavy_rank(nodeid: str) -> int:
    """The place of a test in HEAVY_FIRST (len(HEAVY_FIRST) for the others)."""
    for rank, prefix in enumerate(HEAVY_FIRST):
        if nodeid == prefix or nodeid.startswith((f"{prefix}::", f"{prefix}[")):
            return rank
    return len(HEAVY_FIRST)


def worksteal_shares(total: int, workers: int) -> list[int]:
    """How many tests, in collection order, each worker is first sent by `--dist worksteal`
    (pytest-xdist 3's WorkStealingScheduling: the pending tests split evenly, in order; the others
    are then stolen from the end of a busy worker's queue, never from its start)."""
    shares = []
    left = total
    for worker in range(workers):
        share = left // (workers - worker)
        shares.append(share)
        left -= share
    return shares


def arrange(nodeids: Sequence[str], workers: int) -> list[int]:
    """The order to collect the tests in (indices into `nodeids`) for `workers` xdist workers.

    Worksteal sends each worker one slice of the collection, and only that worker runs the start
    of its slice: with every heavy test at the start of the collection one worker would run them
    all, one after the other, while the others ran out of work. Instead the heavy units go to the
    workers longest first, each to the one with the least heavy seconds so far, at the start of its
    slice; the other tests keep their order and fill the slices.
    """
    units: dict[int, list[int]] = {}
    light: list[int] = []
    for index, nodeid in enumerate(nodeids):
        rank = heavy_rank(nodeid)
        (light if rank == len(HEAVY) else units.setdefault(rank, [])).append(index)
    ranks = sorted(units, key=lambda rank: (-HEAVY[rank][1], rank))
    heads: list[list[int]] = [[] for _ in range(max(workers, 1))]
    seconds = [0.0] * len(heads)
    for rank in ranks:
        worker = min(range(len(heads)), key=lambda w: (seconds[w], w))
        heads[worker].extend(units[rank])
        seconds[worker] += HEAVY[rank][1]
    shares = worksteal_shares(len(nodeids), len(heads))
    if any(len(head) > share for head, share in zip(heads, shares, strict=True)):
        # a selection too small to share: the heavy ones first, as one worker would run them
        return [index for rank in ranks for index in units[rank]] + light
    order: list[int] = []
    rest = iter(light)
    for head, share in zip(heads, shares, strict=True):
        order.extend(head)
        order.extend(next(rest) for _ in range(share - len(head)))
    return order


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tells each xdist worker the `--dist` mode (a worker's own `config.option.dist` is "no"),
    and whether the bytecode cache is cold (`pytest_collection`)."""
    node.workerinput["conform_dist"] = node.config.getvalue("dist")
    if cold_cache(node.config):
        node.workerinput[_COLD] = True


# -- a cold bytecode cache, filled by the workers together ----------------------------------------

#: A module that only the tests import (a helper, not a test module): without bytecode for it,
#: the test modules have none either (a fresh clone, or a new pytest).
_PROBE = ROOT / "tests" / "miniatures.py"
_COLD = "conform_cold_cache"
_COLD_KEY = pytest.StashKey[bool]()


def bytecode_cached(source: Path, environ: Mapping[str, str]) -> bool:
    """Whether `source` has bytecode, newer than itself, where a process with `environ` looks for
    it (under PYTHONPYCACHEPREFIX, else in `__pycache__` beside it)."""
    saved = sys.pycache_prefix
    sys.pycache_prefix = environ.get("PYTHONPYCACHEPREFIX") or None
    try:
        cached = Path(importlib.util.cache_from_source(str(source)))
    finally:
        sys.pycache_prefix = saved
    try:
        return cached.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False


def cold_cache(config: pytest.Config) -> bool:
    """Whether the xdist workers start with a cold bytecode cache (and write one): decided once
    per session, by the controller."""
    if _COLD_KEY not in config.stash:
        writes = not os.environ.get("PYTHONDONTWRITEBYTECODE")
        config.stash[_COLD_KEY] = writes and not bytecode_cached(_PROBE, os.environ)
    return config.stash[_COLD_KEY]


def collected_modules(paths: Sequence[Path]) -> list[str]:
    """The dotted names pytest imports the test modules under `paths` (files or folders of
    tests/) by, in collection order; only modules in packages all the way up, whose
    name is their path."""
    tests = ROOT / "tests"
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(path.rglob("test_*.py"))
    names = []
    for module in sorted(found):
        try:
            parts = module.relative_to(tests).parts
        except ValueError:
            continue
        folders = [tests.joinpath(*parts[:depth]) for depth in range(len(parts))]
        if not all((f / "__init__.py").is_file() for f in folders):
            continue
        names.append(".".join(("tests", *parts[:-1], module.stem)))
    return names


def rotated(names: Sequence[str], *, worker: int, workers: int) -> list[str]:
    """`names` begun at the `worker`-th of `workers` equal shares, and wrapped round."""
    start = len(names) * worker // max(workers, 1)
    return [*names[start:], *names[:start]]


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """With a cold bytecode cache, each xdist worker imports the test modules before collecting,
    each starting at its own share (`rotated`).

    Collecting compiles every test module (and rewrites its asserts), every helper and the
    harness: about 4 s of CPU more per worker than with the cache filled. In the same order, each
    worker would compile every module; begun at different places, each compiles its share and
    finds most of the rest compiled by the others. Nothing waits for anything. A module that fails
    to import is left to the collection, which imports it again and reports it.
    """
    workerinput = getattr(session.config, "workerinput", {})
    if not workerinput.get(_COLD):
        return
    here = session.config.invocation_params.dir
    paths = [here / arg.split("::")[0] for arg in session.config.args]
    worker = int(str(workerinput["workerid"]).removeprefix("gw") or 0)
    names = rotated(collected_modules(paths), worker=worker, workers=workerinput["workercount"])
    for name in names:
        try:
            importlib.import_module(name)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # a skip or an error: the collection imports it again, reports it
            continue


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect, which change the shares
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker the slowest tests come first, spread over the workers (`arrange`).
    Live tests (a real llama-server) run only when asked for: `pytest -m live`."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        worksteal = workerinput.get("conform_dist") == "worksteal"
        workers = int(workerinput["workercount"]) if worksteal else 1
        items[:] = [items[index] for index in arrange([item.nodeid for item in items], workers)]
    if "live" in (config.getoption("markexpr") or "") or os.environ.get("CONFORM_LIVE") == "1":
        return
    skip = pytest.mark.skip(
        reason="live test: run with 'pytest -m live' (needs llama-server and a model; "
        "see docs/recording.md)"
    )
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, what the process holds so far (pytest, the plugins, every test
    module and item, the harness) is left out of the garbage collector's later passes.

    Those objects live as long as the process; each full collection walked all of them again: about
    5 s of CPU a run across the xdist workers (gc.callbacks), half of it saved so. The harness's
    fork server does the same after importing a target (harness/drive/forked.py). Only what is
    frozen here is kept from collection; everything a test makes is collected as before.
    """
    gc.collect()  # the collection's own garbage, not frozen with the rest
    gc.freeze()


# -- the command line ------------------------------------------------------------------------------


def invoke(
    *args: str | Path,
    command: click.Command = main,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
) -> Result:
    """`conform ARGS` (or another click `command`) run in-process through click's CliRunner.

    An exception that escaped the command fails the test here, with its traceback: it is a bug in
    conform, never an exit status (CliRunner would report it as exit 1, which looks like a
    conformance failure). SystemExit is how a command exits, so it is not one.
    """
    result = CliRunner().invoke(command, [str(a) for a in args], env=env, input=input)
    escaped = result.exception
    if escaped is not None and not isinstance(escaped, SystemExit):
        trace = "".join(traceback.format_exception(escaped))
        pytest.fail(
            f"an exception escaped `{' '.join(str(a) for a in args)}`:\n{trace}\n"
            f"output:\n{result.output}",
            pytrace=False,
        )
    return result


def conform(*args: str | Path, env: Mapping[str, str | None] | None = None) -> tuple[int, str]:
    """`conform ARGS` in-process, as its exit status and output (`invoke` for everything else)."""
    result = invoke(*args, env=env)
    return result.exit_code, result.output


def foreign_plugins() -> tuple[str, ...]:
    """`-p no:NAME` for every pytest plugin installed by a distribution other than conform and
    pytest-xdist (hypothesis, langsmith, anyio, syrupy: the `clients` and `test` extras)."""
    from importlib.metadata import entry_points

    own = {"conform", "pytest-xdist"}
    names = sorted(
        {e.name for e in entry_points(group="pytest11") if e.dist is None or e.dist.name not in own}
    )
    return tuple(arg for name in names for arg in ("-p", f"no:{name}"))


#: Options for a pytest run in a fresh process that tests conform's own plugin: the other plugins
#: installed beside it are kept out, since importing them costs about 2 s of CPU per process
#: (langsmith's alone 1 s, hypothesis 0.9 s) and no such run uses them.
FOREIGN_PLUGINS_OFF = foreign_plugins()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own `pytester`, whose runs leave out the plugins of other distributions.

    An in-process run loads every installed plugin anew (pytester restores `sys.modules` after
    each run), and with the `clients` extra that is langsmith's (pydantic models built again:
    about 1 s of CPU a run) besides hypothesis, anyio and syrupy, which no such run uses. Set
    through PYTEST_ADDOPTS, as a user would, so that each run's own arguments stay as written.
    """
    own = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join((*FOREIGN_PLUGINS_OFF, own)).strip())
    return pytester


# -- suites ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def suite() -> Suite:
    """The suite shipped in this repository."""
    return Suite.open(ROOT)


@pytest.fixture
def suite_copy(tmp_path: Path) -> Suite:
    """A private copy of the shipped suite that a test may break."""
    for name in ("recordings", "golden"):
        shutil.copytree(ROOT / name, tmp_path / name)
    return Suite.open(tmp_path)


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """The three-case suite of `tests/programs/mini_suite.py` (one module's tests share it)."""
    return write_mini_suite(tmp_path_factory.mktemp("mini"))


# -- orphaned golden files ------------------------------------------------------------------------


def orphan_problem(suite: Suite) -> str | None:
    """One line naming the shipped suite's golden files without a recording, or None."""
    orphans = suite.orphaned_golden()
    if not orphans:
        return None
    names = ", ".join(str(path.relative_to(suite.root)) for path in orphans)
    return (
        f"golden file(s) without a recording: {names}; restore the recording or delete the file "
        "('conform golden check' lists them, 'pytest --snapshot-update' deletes them)"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """An orphaned golden file stops the run with one line, instead of failing every test that
    runs the whole suite (`conform run` refuses such a suite)."""
    if session.config.getoption("--snapshot-update", default=False):
        return  # that run deletes them
    problem = orphan_problem(Suite.open(ROOT))
    if problem is not None:
        pytest.exit(problem, returncode=1)


# -- no process left behind -----------------------------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    """Make this process the one that orphans of its descendants are given to (Linux), so that a
    process a test started cannot escape the count by outliving its parent."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    return False


def live_children() -> dict[int, str]:
    """This process's children that are still running (zombies reaped), with their command lines.

    With this process a subreaper, that is every process the tests started and did not end.
    """
    me = os.getpid()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) != me:
            continue
        if state in ("Z", "X"):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(int(entry.name), os.WNOHANG)
            continue
        found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def wait_for_children(before: dict[int, str], *, within: float = 5.0) -> dict[int, str]:
    """The children not in `before` that are still running after up to `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = {pid: cmd for pid, cmd in live_children().items() if pid not in before}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


SUBREAPER = _become_subreaper()


@pytest.fixture(scope="session", autouse=True)
def no_process_left() -> object:
    """Fails the session's last test when any process the tests started is still running."""
    if not SUBREAPER or not Path("/proc/self/stat").exists():
        yield
        return
    before = live_children()
    yield
    left = wait_for_children(before)
    assert not left, f"processes started by the tests are still running: {left}"
