"""The shared test support itself: the CLI helper fails a test on an exception that escaped the
command (CliRunner alone reports it as exit 1, which reads like a conformance failure); the
processes a run starts keep their bytecode; inner pytest runs leave out the other plugins; the
slowest tests are named (HEAVY_FIRST) as they are, to start first; `-n auto` is a worker more
than the cores; with a cold bytecode cache each worker imports the test modules from its own
share on; what the collection made is kept out of the garbage collector's passes."""

from __future__ import annotations

import gc
import importlib.util
import os
import py_compile
import sys
from pathlib import Path
from typing import Any

import click
import pytest

import tests.conftest
from tests.conftest import (
    FOREIGN_PLUGINS_OFF,
    HEAVY,
    HEAVY_FIRST,
    arrange,
    bytecode_cached,
    cold_cache,
    collected_modules,
    conform,
    heavy_rank,
    invoke,
    keep_bytecode,
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_xdist_auto_num_workers,
    rotated,
    worksteal_shares,
)

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent


@click.command()
@click.option("--how", type=click.Choice(["raise", "exit", "usage", "pass"]))
def sample(how: str) -> None:
    if how == "raise":
        raise RuntimeError("a bug in the command")
    if how == "exit":
        raise SystemExit(1)
    if how == "usage":
        raise click.UsageError("bad option")
    click.echo("fine")


def test_an_escaped_exception_fails_the_test_with_its_traceback() -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        invoke("--how", "raise", command=sample)
    assert "RuntimeError: a bug in the command" in str(failed.value)
    assert "Traceback" in str(failed.value)


@pytest.mark.parametrize(("how", "code"), [("exit", 1), ("usage", 2), ("pass", 0)])
def test_an_exit_status_is_not_an_escaped_exception(how: str, code: int) -> None:
    assert invoke("--how", how, command=sample).exit_code == code


def test_conform_gives_the_exit_status_and_the_output() -> None:
    code, output = conform("--help")
    assert code == 0 and "Usage:" in output
    code, output = conform("no-such-command")
    assert code == 2 and "No such command" in output


def test_under_dontwritebytecode_the_bytecode_goes_to_a_cache_folder(tmp_path: Path) -> None:
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path)}
    keep_bytecode(environ)
    assert environ == {
        "XDG_CACHE_HOME": str(tmp_path),
        "PYTHONPYCACHEPREFIX": str(tmp_path / "conform" / "pycache"),
    }


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"PYTHONDONTWRITEBYTECODE": ""},
        {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/x"},
    ],
    ids=["unset", "empty", "own-prefix"],
)
def test_otherwise_the_environment_is_left_alone(environ: dict[str, str]) -> None:
    before = dict(environ)
    keep_bytecode(environ)
    assert environ == before


def test_inner_pytest_runs_keep_conform_and_xdist_only() -> None:
    from importlib.metadata import entry_points

    names = {e.name: e.dist.name if e.dist else "" for e in entry_points(group="pytest11")}
    off = set(FOREIGN_PLUGINS_OFF[1::2])
    assert set(FOREIGN_PLUGINS_OFF[0::2]) <= {"-p"}
    assert off == {
        f"no:{n}" for n, dist in names.items() if dist not in ("conform", "pytest-xdist")
    }
    assert "no:conform" not in off and "no:xdist" not in off


@pytest.mark.parametrize("entry", HEAVY_FIRST)
def test_each_heavy_first_entry_names_a_test_that_exists(entry: str) -> None:
    path, _, name = entry.partition("::")
    name, _, param = name.partition("[")
    assert (ROOT / path).is_file(), entry
    text = (ROOT / path).read_text(encoding="utf-8")
    assert not name or f"\ndef {name}(" in text, entry
    assert param.removesuffix("]") in text, entry


def test_heavy_tests_rank_in_their_order_and_the_others_after_them() -> None:
    first, second = HEAVY_FIRST[0], HEAVY_FIRST[1]
    file = next(rank for rank, entry in enumerate(HEAVY_FIRST) if entry.endswith(".py"))
    others = len(HEAVY_FIRST)
    assert heavy_rank(first) == 0 and heavy_rank(second) == 1
    assert heavy_rank(f"{HEAVY_FIRST[file]}::test_x") == file  # a file: every test in it
    assert heavy_rank(f"{first}_and_more") == others  # a prefix is a whole name, not a start
    assert heavy_rank("tests/test_docs.py::test_x") == others
    assert [seconds for _, seconds in HEAVY] == sorted((s for _, s in HEAVY), reverse=True)


class _Node:
    """What xdist's scheduler needs of a worker: the tests it was sent, in order."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)


def worksteal_first_shares(collection: list[str], workers: int) -> list[list[str]]:
    """The tests pytest-xdist's own worksteal scheduler first sends each of `workers` workers."""
    from xdist.scheduler import WorkStealingScheduling  # type: ignore[import-untyped]

    config = pytest.Config.fromdictargs({"tx": [f"{workers}*popen"]}, [])
    scheduling = WorkStealingScheduling(config)
    assert scheduling.numnodes == workers
    nodes = [_Node(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduling.add_node(node)
        scheduling.add_node_collection(node, collection)
    scheduling.schedule()
    return [[collection[index] for index in node.sent] for node in nodes]


#: A collection as pytest gives it: the heavy tests among the others, in file order.
LIGHT = [
    f"tests/test_light_{n // 40}.py::test_{n}" for n in range(401)
]  # 409 tests: shares of 136 and 137
HEAVY_TESTS = [*HEAVY_FIRST[:6], f"{HEAVY_FIRST[6]}::test_a", f"{HEAVY_FIRST[6]}::test_b"]
COLLECTION = LIGHT[:150] + HEAVY_TESTS[::-1] + LIGHT[150:]


def test_worksteal_first_sends_each_worker_the_share_we_plan_for() -> None:
    shares = worksteal_first_shares(COLLECTION, 3)
    assert [len(share) for share in shares] == worksteal_shares(len(COLLECTION), 3)
    assert [test for share in shares for test in share] == COLLECTION  # in order, no gaps


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_the_heavy_tests_start_each_workers_share_spread_by_their_seconds(workers: int) -> None:
    order = [COLLECTION[index] for index in arrange(COLLECTION, workers)]
    assert sorted(order) == sorted(COLLECTION)
    shares = worksteal_first_shares(order, workers)
    heads = [[test for test in share if heavy_rank(test) < len(HEAVY)] for share in shares]
    for share, head in zip(shares, heads, strict=True):
        assert share[: len(head)] == head  # the heavy ones first, the longest first
        assert [heavy_rank(test) for test in head] == sorted(heavy_rank(test) for test in head)
    assert sorted(test for head in heads for test in head) == sorted(HEAVY_TESTS)
    # One unit (a file's tests) stays on one worker.
    assert sum(HEAVY_FIRST[6] in " ".join(head) for head in heads) == 1
    seconds = [sum(HEAVY[r][1] for r in {heavy_rank(test) for test in head}) for head in heads]
    assert max(seconds) - min(seconds) <= max(s for _, s in HEAVY[:7])
    assert all(seconds)  # each worker starts with a heavy one
    assert [test for test in order if test in LIGHT] == LIGHT  # the others keep their order


def test_a_selection_too_small_to_share_runs_the_heavy_tests_first() -> None:
    few = [LIGHT[0], *HEAVY_TESTS[::-1], LIGHT[1]]
    order = [few[index] for index in arrange(few, 8)]
    assert order[: len(HEAVY_TESTS)] == sorted(HEAVY_TESTS[::-1], key=heavy_rank)  # stable
    assert order[len(HEAVY_TESTS) :] == LIGHT[:2]
    assert [few[index] for index in arrange(few, 1)] == order


def test_auto_starts_one_worker_more_than_the_cores(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert pytest_xdist_auto_num_workers(pytestconfig) == 3
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert pytest_xdist_auto_num_workers(pytestconfig) == 17
    # The hook is the one xdist asks (first result wins): ours, above xdist's own.
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == 17
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")  # the user's word stands
    assert pytest_xdist_auto_num_workers(pytestconfig) is None
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == 5


def test_a_pytester_run_leaves_the_other_plugins_out(pytester: pytest.Pytester) -> None:
    """The inner runs of pytester load no plugin of another distribution (each would be imported
    again in every run); conform's own plugin is still there."""
    names = [name.removeprefix("no:") for name in FOREIGN_PLUGINS_OFF[1::2]]
    assert names  # hypothesis and syrupy, at least (the `test` extra)
    pytester.makepyfile(
        f"""
        def test_plugins(request):
            manager = request.config.pluginmanager
            assert manager.has_plugin("conform")
            assert [name for name in {names!r} if manager.has_plugin(name)] == []
        """
    )
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0


class _Config:
    """What the collection hook reads of a worker's config."""

    def __init__(self, dist: str) -> None:
        self.workerinput = {"workercount": 3, "conform_dist": dist}
        self.option = type("Option", (), {"dist": "no"})()  # what xdist sets in a worker
        self.stash = pytest.Stash()
        self.cleanups: list[Any] = []

    def add_cleanup(self, cleanup: Any) -> None:
        self.cleanups.append(cleanup)

    def getoption(self, name: str) -> str:
        return ""

    def getvalue(self, name: str) -> str:
        return str(self.workerinput["conform_dist"])


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.keywords: dict[str, object] = {}


def test_the_controller_tells_each_worker_the_dist_mode() -> None:
    """A worker's own `--dist` is "no" (xdist sets it so): the controller passes its mode on."""
    node = type("Node", (), {"config": _Config("worksteal"), "workerinput": {}})()
    pytest_configure_node(node)
    cold = cold_cache(node.config)
    assert node.workerinput == {"conform_dist": "worksteal"} | (
        {"conform_cold_cache": True} if cold else {}
    )


def _compiled(source: Path, prefix: Path) -> None:
    saved = sys.pycache_prefix
    sys.pycache_prefix = str(prefix)
    try:
        py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)))
    finally:
        sys.pycache_prefix = saved


def test_bytecode_counts_when_it_is_where_the_workers_look_and_newer_than_its_source(
    tmp_path: Path,
) -> None:
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    environ = {"PYTHONPYCACHEPREFIX": str(tmp_path / "cache")}
    assert not bytecode_cached(source, environ)
    _compiled(source, tmp_path / "cache")
    assert bytecode_cached(source, environ)
    assert not bytecode_cached(source, {})  # not in __pycache__
    later = source.stat().st_mtime + 10
    os.utime(source, (later, later))
    assert not bytecode_cached(source, environ)


def test_a_cold_cache_is_decided_once_for_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("x = 1\n")
    monkeypatch.setattr(tests.conftest, "_PROBE", probe)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "cache"))
    config: Any = _Config("worksteal")
    assert cold_cache(config)
    _compiled(probe, tmp_path / "cache")
    assert cold_cache(config)  # decided at the start
    assert not cold_cache(_Config("worksteal"))  # type: ignore[arg-type]
    (tmp_path / "cache").rename(tmp_path / "gone")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # the workers write no bytecode
    assert not cold_cache(_Config("worksteal"))  # type: ignore[arg-type]


def test_the_test_modules_are_named_as_pytest_imports_them() -> None:
    names = collected_modules([ROOT / "tests"])
    assert "tests.test_conftest" in names and "tests.check.test_modes" in names
    assert "tests.fuzz.test_model" in names
    assert not [name for name in names if name.startswith("tests.fuzz.fuzz_")]  # programs
    assert sys.modules[__name__] is sys.modules["tests.test_conftest"]  # this module's own name
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        assert Path(spec.origin) == ROOT.joinpath(*name.split(".")).with_suffix(".py")
    folder = collected_modules([ROOT / "tests" / "drive"])
    assert folder and all(name.startswith("tests.drive.test_") for name in folder)
    assert collected_modules([ROOT / "tests" / "test_api.py"]) == ["tests.test_api"]


def test_each_worker_begins_at_its_own_share_and_imports_every_module() -> None:
    names = [f"m{n}" for n in range(7)]
    orders = [rotated(names, worker=w, workers=3) for w in range(3)]
    assert [order[0] for order in orders] == ["m0", "m2", "m4"]
    assert all(sorted(order) == names for order in orders)
    assert rotated(names, worker=0, workers=1) == names


@pytest.mark.parametrize(("dist", "workers"), [("worksteal", 3), ("load", 1)])
def test_a_worker_arranges_its_collection_for_the_dist_mode(dist: str, workers: int) -> None:
    items = [_Item(nodeid) for nodeid in COLLECTION]
    pytest_collection_modifyitems(_Config(dist), items)  # type: ignore[arg-type]
    assert [item.nodeid for item in items] == [
        COLLECTION[index] for index in arrange(COLLECTION, workers)
    ]


def test_what_the_collection_made_is_frozen_out_of_the_garbage_collector() -> None:
    # tests/conftest.py's pytest_collection_finish: pytest's items and the test modules, at least
    # tens of thousands of objects (a frozen count of 0 means the hook did not run).
    assert gc.get_freeze_count() > 10_000
