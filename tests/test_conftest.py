"""The shared test support itself: the CLI helper fails a test on an exception that escaped the
command (CliRunner alone reports it as exit 1, which reads like a conformance failure); the
processes a run starts keep their bytecode; inner pytest runs leave out the other plugins; the
slowest tests are named (HEAVY_FIRST) as they are, to start first; `-n auto` is a worker more
than the cores."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from tests.conftest import (
    FOREIGN_PLUGINS_OFF,
    HEAVY_FIRST,
    conform,
    heavy_rank,
    invoke,
    keep_bytecode,
    pytest_xdist_auto_num_workers,
)

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
    assert (ROOT / path).is_file(), entry
    assert not name or f"\ndef {name}(" in (ROOT / path).read_text(encoding="utf-8"), entry


def test_heavy_tests_rank_in_their_order_and_the_others_after_them() -> None:
    first, second = HEAVY_FIRST[0], HEAVY_FIRST[1]
    others = len(HEAVY_FIRST)
    assert heavy_rank(f"{first}[vercel-ai]") == heavy_rank(first) == 0
    assert heavy_rank(f"{second}::test_x") == 1  # a file: every test in it
    assert heavy_rank(f"{first}_and_more") == others  # a prefix is a whole name, not a start
    assert heavy_rank("tests/test_docs.py::test_x") == others


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
