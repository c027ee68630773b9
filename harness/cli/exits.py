"""How the `conform` command ends: the one place that turns errors into `Error:` lines and exit
codes (the README's exit-code table).

The harness's own errors (`harness.errors.ConformError`) become one `Error:` line with a hint and
exit 2 (or the error's own code); an environment fault (disk full, read-only, a deleted current
folder) exit 2 too; a closed stdout (`conform list | head -1`) ends quietly; anything else is a
bug in conform, reported as such with exit 3.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from typing import Any

import click

from harness.errors import INTERNAL_ERROR, ConformError, Interrupted
from harness.files import environment_error
from harness.safetext import printable, shorten


class _SetupFailure(click.ClickException):
    """A ConformError, or a fault of the machine: one `Error:` line with its hint (LF and CR in
    it written `\\n` and `\\r`), then the error's details, if any, indented below it."""

    exit_code = 2

    def __init__(self, message: str, *, details: str = "") -> None:
        super().__init__(error_line(message))
        self.details = details

    def show(self, file: Any = None) -> None:
        super().show(file)
        for line in self.details.splitlines():
            click.echo(f"  {printable(line)}", err=True)


class _ExchangeFailure(_SetupFailure):
    """A ConformError of exit code 1: `conform record`'s exchange failed."""

    exit_code = 1


def error_line(text: str) -> str:
    """`text` on one printable line: a line break written as `\\n` (or `\\r`), as Python
    writes it in a string, never as a byte's code."""
    return printable(text.replace("\r", "\\r").replace("\n", "\\n"))


class _InternalError(click.ClickException):
    """An exception conform did not expect: a bug in conform, reported as such (exit 3)."""

    exit_code = INTERNAL_ERROR

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc

    def show(self, file: Any = None) -> None:
        from harness.reports.report import conform_version  # (only for this report)

        trace = "".join(traceback.format_exception(self.exc))
        click.echo(printable(trace.rstrip(), keep_lines=True), err=True)
        click.echo(
            f"Internal error: conform {conform_version()} failed: "
            f"{printable(shorten(self.message, 500))}\n"
            "This is a bug in conform, not a verdict on the target. Please report it to conform's "
            "maintainers with the command line, the traceback above and, if you can, the "
            "target's reply that caused it. Reports already asked for hold the cases run so far.",
            err=True,
        )


class ConformGroup(click.Group):
    """Turns the harness's own errors into one `Error:` line and their exit code (2, or 1 for a
    failed recording), the world's faults (disk full, read-only, the current folder deleted) into
    one `Error:` line and exit code 2, a signal into 128 + its number (Ctrl-C: 130), a closed
    stdout into a quiet exit, and anything unexpected into the internal-error report and exit
    code 3."""

    def invoke(self, ctx: click.Context) -> Any:
        _any_encoding()
        try:
            try:
                os.getcwd()
            except FileNotFoundError:
                raise ConformError(
                    "the current folder no longer exists",
                    hint="cd to a folder that exists and run it again",
                ) from None
            try:
                result = super().invoke(ctx)
            except (SystemExit, click.exceptions.Exit):
                _flush_stdout()  # the exit status stands; a closed pipe only goes quiet
                raise
            if _flush_stdout():
                raise click.exceptions.Exit(128 + signal.SIGPIPE)
            return result
        except ConformError as exc:
            failure = _ExchangeFailure if exc.exit_code == 1 else _SetupFailure
            raise failure(str(exc), details=exc.details) from None
        except Interrupted as exc:
            raise click.exceptions.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            raise click.exceptions.Exit(128 + signal.SIGINT) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _quiet_closed_pipe()
            raise click.exceptions.Exit(128 + signal.SIGPIPE) from None
        except OSError as exc:
            error = environment_error(exc)
            if error is None:
                raise _InternalError(exc) from None
            raise _SetupFailure(str(error)) from None
        except Exception as exc:
            raise _InternalError(exc) from None


def _any_encoding() -> None:
    """Let stdout and stderr write any text, whatever their encoding (`PYTHONIOENCODING=latin-1`,
    `LC_ALL=C`): a character they cannot hold is written as its escape (`\\u65e5`), never an
    error that ends the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")


def _flush_stdout() -> bool:
    """Flush stdout now, where a closed pipe can be caught; True when it was closed. A stdout
    that was never open (`conform run ... >&-`) has nothing to flush: the exit status stands."""
    if sys.stdout is None:
        return False
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_closed_pipe()
        return True
    except (OSError, ValueError):
        pass
    return False


def _quiet_closed_pipe() -> None:
    """The reader of stdout went away (`conform list | head -1`): say nothing more, and keep
    Python from complaining as it flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
