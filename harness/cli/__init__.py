"""The `conform` command: a group of commands, each in a module of its own that parses its
options, calls one library function, renders the result and returns.

    run       harness/cli/run.py           one target over the suite's cases
    list      harness/cli/list_cases.py    the cases and what each pins
    golden    harness/cli/golden.py        `golden update`, `golden check`
    record    harness/cli/record.py        capture a live llama-server exchange
    matrix    harness/cli/matrix.py        several targets side by side
    fuzz      harness/cli/fuzz.py          generated streams through a target

The options they share are declared once (`harness.cli.options`); how a command ends (the one
place that turns errors into `Error:` lines and exit codes) is `harness.cli.exits`; the exit codes
are the README's one table (README.md#exit-codes).

A command's module is imported when that command runs (or help lists it), so `conform run` does
not import the recorder's HTTP client or the fuzzer's model. Importing this package does nothing
else: the fork server of `conform run TARGET` is started ahead only when the installed command
itself runs (`main()` with the process's own command line; docs/layout.md, "How Python workers
start").
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

import click

from harness.cli.exits import ConformGroup

#: Each command's name, and where it is declared (module, attribute).
COMMANDS = {
    "fuzz": ("harness.cli.fuzz", "fuzz_command"),
    "golden": ("harness.cli.golden", "golden_group"),
    "list": ("harness.cli.list_cases", "list_command"),
    "matrix": ("harness.cli.matrix", "matrix_command"),
    "record": ("harness.cli.record", "record"),
    "run": ("harness.cli.run", "run_command"),
}


def is_conform_command(argv: Sequence[str]) -> bool:
    """Whether this process is the `conform` command itself: the installed script, or
    `python -m harness` (whose `sys.argv[0]` is the path of `harness/__main__.py`)."""
    command = argv[0] if argv else ""
    own_main = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__main__.py"
    )
    return os.path.basename(command) == "conform" or (
        command.endswith("__main__.py") and os.path.realpath(command) == os.path.realpath(own_main)
    )


def start_ahead(argv: Sequence[str]) -> bool:
    """For the `conform` command's own command line `argv` (`sys.argv`), start the fork server
    that `conform run TARGET` will want before conform imports the rest of itself
    (`harness.drive.forked.head_start`); True when it was asked to."""
    if argv[1:2] != ["run"] or not is_conform_command(argv):
        return False
    from harness.drive.forked import head_start

    head_start(argv[1:])
    return True


class Conform(ConformGroup):
    """The `conform` group: its commands are imported on first use (`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def main(self, args: Sequence[str] | None = None, *rest: Any, **extra: Any) -> Any:
        """Run the command; with no `args` (the process's own command line), start the fork
        server of `conform run TARGET` ahead first (`start_ahead`)."""
        if args is None:
            start_ahead(sys.argv)
        else:  # called from Python (tests): the caller's process, not ours to end
            return super().main(args, *rest, **extra)
        before = set(threading.enumerate())
        try:
            return super().main(args, *rest, **extra)
        except SystemExit as exc:
            _exit_past_leftover_threads(before, exc)
            raise


def _exit_past_leftover_threads(before: set[threading.Thread], exc: SystemExit) -> None:
    """A target run in this process (`--in-process`) may leave a thread running that never
    ends (one that spins): Python would wait for it at exit for ever. Say so, and exit now with
    the command's own status."""
    from harness.drive.limits import exit_now, leftover_threads

    left = leftover_threads(before)
    if not left:
        return
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    names = ", ".join(repr(t.name) for t in left[:5])
    click.echo(
        f"warning: {len(left)} thread(s) the target started still run ({names}); conform exits "
        "without waiting for them",
        err=True,
    )
    exit_now(code)


@click.group(cls=Conform, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="conform", prog_name="conform")
def main() -> None:
    """Golden-file conformance harness for assemblers of llama-server chat streams."""
