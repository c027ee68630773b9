"""The pytest plugin: `pytest --conform-target mypkg:Assembler` runs the suite as pytest tests.

Registered through the `pytest11` entry point, it does nothing unless `--conform-target` or
`--conform-exec` is given. Then it adds one test per case and mode, named like conform's JUnit
report (`conform/llama-server::tool_call[plain]`), each failing with the text `conform run` prints
for it; `-k` also matches the case id (`-k llama-server/tool_call`) and the mode. Targets run
the way `conform run` runs them: in a worker process (each pytest-xdist worker has its own), or in
pytest's process with `--conform-in-process`. `--conform-xfail FILE` marks the cases an
expected-failures file lists as strict xfails, so a case that starts passing fails.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.check.results import CaseResult
    from harness.check.xfail import XfailList
    from harness.pipeline import Plan
    from harness.reports.report import RunInfo
    from harness.suite.cases import Case


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conform", "conformance of a llama-server stream assembler (conform)")
    group.addoption(
        "--conform-target",
        metavar="TARGET",
        help="Run conform's suite against TARGET (module:Class, module:factory or file.py:Class).",
    )
    group.addoption(
        "--conform-exec",
        metavar="COMMAND",
        help="Run conform's suite against a program speaking conform's line protocol.",
    )
    group.addoption(
        "--conform-suite",
        metavar="DIR",
        help="A folder with recordings/ and golden/ (default: the suite shipped with conform).",
    )
    group.addoption(
        "--conform-mode",
        action="append",
        default=[],
        metavar="MODE",
        help="Input mode; repeatable (default: every mode).",
    )
    group.addoption(
        "--conform-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="Only cases of this class of input: valid, invalid or implementation-defined "
        "(computed from their golden files); repeatable (default: every class).",
    )
    group.addoption(
        "--conform-xfail",
        metavar="FILE",
        help="Expected failures (as for 'conform run --xfail'): its cases are strict xfails.",
    )
    group.addoption(
        "--conform-seed", type=int, default=None, metavar="N", help="Seed of mutating modes."
    )
    group.addoption(
        "--conform-timeout",
        default=None,
        metavar="SECONDS",
        help="Time allowed for each case in the worker process (default: as conform run).",
    )
    group.addoption(
        "--conform-level",
        default=None,
        metavar="LEVEL",
        help="The level of conformance judged: full (default) or completion.",
    )
    group.addoption(
        "--conform-in-process",
        action="store_true",
        default=False,
        help="Run the Python target inside pytest's process instead of a worker process.",
    )


def _seconds(value: str | None) -> float | None:
    """`--conform-timeout` checked as `conform run --timeout` is (`check_seconds`): one usage
    error if it is not a finite number of seconds above 0, at most a day."""
    from harness.errors import ConformError
    from harness.seconds import check_seconds

    if value is None:
        return None
    try:
        return check_seconds(value, option="--conform-timeout")
    except ConformError as exc:
        raise pytest.UsageError(str(exc)) from None


class ConformFailure(Exception):
    """A case that did not pass; pytest shows its result as `conform run` would."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(f"{result.case_id} [{result.mode}]: {result.status}")
        self.result = result


class _Run:
    """What every conform test of one pytest process shares: the options, goldens and a driver."""

    def __init__(self, config: pytest.Config) -> None:
        from harness.check.options import RunOptions
        from harness.errors import ConformError

        if config.getoption("conform_target") and config.getoption("conform_exec"):
            raise pytest.UsageError("give --conform-target or --conform-exec, not both")
        # The options conform run takes, by the same rules (a timeout of None: conform run's).
        given = {
            "target": config.getoption("conform_target"),
            "exec_command": config.getoption("conform_exec"),
            "in_process": config.getoption("conform_in_process"),
            "timeout": _seconds(config.getoption("conform_timeout")),
            "suite_dirs": tuple(Path(d) for d in [config.getoption("conform_suite")] if d),
            "modes": tuple(config.getoption("conform_mode")),
            "seed": config.getoption("conform_seed"),
            "xfail_file": config.getoption("conform_xfail"),
            "level": config.getoption("conform_level"),
        }
        if given["xfail_file"] is not None:
            given["xfail_file"] = Path(given["xfail_file"]).absolute()
        try:
            self.options = RunOptions(**{k: v for k, v in given.items() if v is not None})
        except ConformError as exc:
            raise pytest.UsageError(str(exc)) from None
        #: --conform-class: only cases of these classes of input (none: every class).
        self.classes: tuple[str, ...] = tuple(config.getoption("conform_class") or ())
        self.plan: Plan | None = None  # made at collection (`_conform_items`)
        self._capped: dict[str, bool] = {}  # each recording's thinking_capped, read once
        # The one driver of the session, and the runner `conform run` uses: as harness.pipeline
        # runs a case (harness/pipeline/case_runner.py).
        from harness.pipeline.case_runner import CaseRunner

        self.runner = CaseRunner(self.options)
        self.threads_before = set(threading.enumerate())  # the target may start more
        self.exit_status = 0  # pytest's, once the session has finished

    def golden(self, case: Case) -> dict[str, Any]:
        """The golden document of `case`, when it was made for its recording as it is (a stale
        one is the suite's fault, named as `conform run` names it: GoldenError)."""
        from harness.suite.golden import made_for
        from harness.suite.recording import read_info

        assert self.plan is not None, "collection makes the plan"
        capped = self._capped.get(case.case_id)
        if capped is None:  # a broken recording is named before its golden file
            capped = self._capped[case.case_id] = read_info(case.recording).thinking_capped
        return made_for(case, capped, self.plan.golden(case))

    def info(self) -> RunInfo:
        """The run as a report names it: what `reproduce` needs for a `rerun:` line that runs
        one case alone with `conform run`, as `conform run` prints it."""
        from harness.reports.report import RunInfo

        assert self.plan is not None, "collection makes the plan"
        options, plan = self.options, self.plan
        return RunInfo(
            options.label,
            plan.roots[0],
            len(plan.cases),
            plan.modes,
            options.seed,
            suites=plan.roots,
            kind=options.kind,
            level=options.level,
            rerun=options.rerun_args(),
        )

    def close(self) -> None:
        self.runner.close()


_RUN = pytest.StashKey[_Run]()


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("conform_target") or config.getoption("conform_exec"))


def pytest_configure(config: pytest.Config) -> None:
    if _active(config):
        config.stash[_RUN] = _Run(config)
        _keep_conform_ids(config)
        _take_conform_args(config)


_SELECTED = pytest.StashKey[list[str]]()


def _is_conform_id(arg: str) -> bool:
    """An argument that names conform's tests (`conform/llama-server::tool_call[plain]`, a
    group `conform/llama-server`, or `conform`), not a path of the user's."""
    path = arg.split("::", 1)[0]
    if path != "conform" and not path.startswith("conform/"):
        return False
    return not Path(path).exists()


def _take_conform_args(config: pytest.Config) -> None:
    """Take the ids of conform's tests out of the paths pytest collects (they are no files, and
    pytest would refuse them) and select by them: a node id pytest printed, passed back to it,
    runs that test. When only such ids were given, pytest collects no file of the user's."""
    args = list(config.args)
    ours = [arg for arg in args if _is_conform_id(arg)]
    if not ours:
        return
    config.stash[_SELECTED] = ours
    rest = [arg for arg in args if not _is_conform_id(arg)]
    if not rest:  # a folder with no test file in it: nothing else is collected
        rest = [str(Path(__file__).resolve().parent / "schemas")]
    config.args[:] = rest


def _selected(item: pytest.Item, ids: list[str]) -> bool:
    nodeid = item.nodeid
    return any(
        nodeid == wanted or nodeid.startswith((wanted + "::", wanted + "/")) or wanted == "conform"
        for wanted in ids
    )


def _keep_conform_ids(config: pytest.Config) -> None:
    """Show conform's tests by their own ids (`conform/llama-server::tool_call[plain]`) wherever
    pytest runs from: they are not files below the rootdir, so pytest's making a node id
    relative to the current folder (`../conform/...`) would name no path at all."""
    relative = config.cwd_relative_nodeid

    def cwd_relative_nodeid(nodeid: Any) -> Any:
        # A str up to pytest 8, a NodeId with a `path` after.
        path = str(getattr(nodeid, "path", str(nodeid).split("::", 1)[0]))
        if path == "conform" or path.startswith("conform/"):
            return nodeid
        return relative(nodeid)

    setattr(config, "cwd_relative_nodeid", cwd_relative_nodeid)  # noqa: B010


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    run.close()
    if run.options.in_process and not hasattr(config, "workerinput"):
        _exit_past_leftover_threads(config, run)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        run.exit_status = int(exitstatus)


def _exit_past_leftover_threads(config: pytest.Config, run: _Run) -> None:
    """A target run in pytest's process may leave a thread that never ends (one that spins):
    Python would wait for it for ever once pytest is done. Say so and exit with pytest's
    status (the last thing pytest does, every other plugin unconfigured)."""
    from harness.drive.limits import exit_now, leftover_threads

    left = leftover_threads(run.threads_before)
    if not left:
        return
    names = ", ".join(repr(t.name) for t in left[:5])
    sys.stderr.write(
        f"conform: {len(left)} thread(s) the target started still run ({names}); pytest exits "
        "without waiting for them\n"
    )
    exit_now(run.exit_status)


class ConformGroup(pytest.Collector):
    """The cases of one folder of the suite (`conform/llama-server`)."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:  # pragma: no cover - never called
        return []


class ConformItem(pytest.Item):
    """One case in one mode."""

    def __init__(self, *, case: Case, mode: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.mode = mode
        self.extra_keyword_matches.update({case.case_id, mode})

    def runtest(self) -> None:
        from harness.check.results import PASSED
        from harness.errors import ConformError

        run = self.config.stash[_RUN]
        try:
            result = run.runner.run(self.case, run.golden(self.case), mode=self.mode)
        except ConformError as exc:  # the target cannot start, a golden file is stale
            pytest.fail(f"conform: {exc}", pytrace=False)
        if result.status != PASSED:
            raise ConformFailure(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, ConformFailure):
            from harness.reports.report import reproduce, shown_recording
            from harness.reports.text import Fold, describe_fold

            info = self.config.stash[_RUN].info()
            lines = describe_fold(
                Fold((excinfo.value.result,)),
                where=lambda r: shown_recording(info, r),
                rerun=lambda r: reproduce(info, case=r.case_id, mode=r.mode),
            )
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.recording, None, f"{self.case.case_id} [{self.mode}]"


def _check_run(run: _Run) -> tuple[Plan, XfailList | None]:
    """The plan and expected failures of the run, and its target started (or, in process,
    imported): pytest.UsageError, in `conform run`'s words, for what is wrong with them."""
    from harness.drive.inprocess import load_target
    from harness.errors import ConformError
    from harness.pipeline import Selection, prepare

    options = run.options
    try:
        run.plan = plan = prepare(Selection(options.suite_dirs, classes=run.classes), options.modes)
        expected = plan.expected_failures(options.xfail_file)
        # A target that cannot be imported or started is one usage error, found now, not a
        # failing test each. A worker imports it (this process does not, when it need not).
        if options.target is not None and options.in_process:
            load_target(options.target)
        else:
            run.runner.driver()
    except ConformError as exc:
        raise pytest.UsageError(exc.describe()) from None
    return plan, expected


def _conform_items(session: pytest.Session, run: _Run) -> list[pytest.Item]:

    plan, expected = _check_run(run)
    suite = plan.suites[0]
    cases = plan.cases
    groups: dict[str, ConformGroup] = {}
    items: list[pytest.Item] = []
    for case in cases:
        folder, _, leaf = case.case_id.rpartition("/")
        group_id = f"conform/{folder}" if folder else "conform"
        group = groups.get(group_id)
        if group is None:
            group = ConformGroup.from_parent(
                session, name=group_id, nodeid=group_id, path=suite.recordings_dir
            )
            groups[group_id] = group
        for mode in plan.modes:
            name = f"{leaf}[{mode}]"
            # Named as pytest parses an id given back to it (`--lf`, the command line): the
            # parameter `[mode]` apart from the name, as a parametrized test's.
            item = ConformItem.from_parent(
                group, name=name, nodeid=f"{group_id}::{name}", case=case, mode=mode
            )
            entry = None if expected is None else expected.find(case.case_id, mode)
            if expected is not None and entry is not None:
                where = expected.source(entry)
                reason = f"{where}: {entry.reason}" if entry.reason else where
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
            items.append(item)
    return items


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: the conform tests are in place before -k, -m and xdist look at the items.
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    made = _conform_items(session, run)
    ids = config.stash.get(_SELECTED, None)
    if ids is not None:  # those the command line named, as if collected alone
        made = [item for item in made if _selected(item, ids)]
    items[:0] = made


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist, the usage errors of `_conform_items` (a target that cannot start, a
    suite or an expected-failures file that is wrong) found here, in the process that reports
    them: the workers that collect would otherwise end with "no tests ran" and no word."""
    config = session.config
    run = config.stash.get(_RUN, None)
    if run is None or hasattr(config, "workerinput"):
        return
    if getattr(config.option, "dist", "no") in (None, "no"):
        return  # without xdist, collection finds them and says so
    try:
        _check_run(run)
    finally:
        run.close()
