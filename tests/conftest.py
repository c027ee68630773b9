"""Shared test support: `invoke`/`conform`, the one way tests run the `conform` command in-process;
the project's own suite, a scratch copy of it and the three-case `mini` suite; the check that no
process started by the test run outlives it."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Live tests (a real llama-server) run only when asked for: `pytest -m live`."""
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


#: The signals a `conform` run handles (`harness.pipeline.signals.HANDLED`).
_RUN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signals_as_they_were() -> Iterator[None]:
    """Each test leaves the signal handlers as it found them: a run invoked in-process that was
    interrupted ignores the signals as it exits (as a process exiting 128+N should), and that must
    not reach the next test in this process, nor the programs it starts (an ignored SIGINT is
    inherited: a child would not see Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {signum: signal.getsignal(signum) for signum in _RUN_SIGNALS}
    yield
    for signum, handler in handlers.items():
        if handler is not None and signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


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


#: Where scratch copies of the suite go: memory (tmpfs) where the machine has it. Making the
#: suite's 1,552 files on this machine's ext4 costs the kernel 0.5-1 s of CPU a copy, against
#: 0.12 s on tmpfs (`cp -r` alike); about 50 tests make one.
SCRATCH = Path("/dev/shm")


def _roomy(folder: Path) -> bool:
    """True when `folder` is a writable folder with 1 GiB free (a container's /dev/shm may have
    64 MiB: three workers' copies of 10 MiB each, and whatever else uses it, would not fit)."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        return False
    return os.access(folder, os.W_OK) and stat.f_bavail * stat.f_frsize >= 1 << 30


@pytest.fixture
def suite_copy(tmp_path: Path) -> Iterator[Suite]:
    """A private copy of the shipped suite that a test may break (in memory where the machine
    has a tmpfs at /dev/shm, else in `tmp_path`; removed after the test either way)."""
    in_memory = _roomy(SCRATCH)
    root = Path(tempfile.mkdtemp(prefix="conform-suite-", dir=SCRATCH)) if in_memory else tmp_path
    try:
        for name in ("recordings", "golden"):
            shutil.copytree(ROOT / name, root / name, copy_function=shutil.copyfile)
        yield Suite.open(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def suite_of(suite: Suite, patterns: tuple[str, ...], root: Path) -> Suite:
    """A private suite at `root` holding the cases of `suite` that `patterns` select (their
    recordings and golden files), that a test may break: for a test about what a command does
    with a case, where a copy of the whole suite would only cost time."""
    for case in suite.cases(patterns):
        for path in (case.recording, case.golden):
            copy = root / path.relative_to(suite.root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    return Suite.open(root)


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """The three-case suite of `tests/programs/mini_suite.py` (one module's tests share it)."""
    return write_mini_suite(tmp_path_factory.mktemp("mini"))


@pytest.fixture
def depth_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain reading's depth and I3 `ignore`'s cutting, each made once per text: both are
    pure functions of it, and r6_nesting_100000's payload takes them 0.2 s a time, in every mode,
    under every outcome and under both assemblers (the fast one hands such a payload to the plain
    reading)."""
    from reference import json_text

    for name in ("nesting_depth", "without_deep_values"):
        monkeypatch.setattr(json_text, name, functools.cache(getattr(json_text, name)))


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
