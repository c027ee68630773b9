"""The shared test support itself: the CLI helper fails a test on an exception that escaped the
command (CliRunner alone reports it as exit 1, which reads like a conformance failure)."""

from __future__ import annotations

import click
import pytest

from tests.conftest import conform, invoke


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
