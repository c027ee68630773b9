"""The shared test support itself: the CLI helper fails a test on an exception that escaped the
command (CliRunner alone reports it as exit 1, which reads like a conformance failure); the
processes a run starts keep their bytecode; inner pytest runs leave out the other plugins; `-n auto`
is a worker more than the cores; what the collection made is kept out of the garbage collector's
passes."""

from __future__ import annotations

import gc
from pathlib import Path

import click
import pytest

from tests.conftest import (
    FOREIGN_PLUGINS_OFF,
    conform,
    invoke,
    keep_bytecode,
    pytest_xdist_auto_num_workers,
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


def test_what_the_collection_made_is_frozen_out_of_the_garbage_collector() -> None:
    # tests/conftest.py's pytest_collection_finish: pytest's items and the test modules, at least
    # tens of thousands of objects (a frozen count of 0 means the hook did not run).
    assert gc.get_freeze_count() > 10_000
