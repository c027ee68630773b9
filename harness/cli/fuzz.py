"""`conform fuzz`: generated streams through a target and the reference, a difference shrunk.

The command parses its options, calls `harness.fuzz.loop.run_fuzz` once, and renders the record:
on a difference, the failing results as `conform run` shows them (`harness.reports.text`), then the
shrunk stream itself, and with `--save DIR` the recording and golden file written (exit 1);
otherwise one line saying how many streams agreed (exit 0). Bad options are one `Error:` line
(exit 2), from the `conform` group.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from harness.check.options import RunOptions
from harness.cli import options as opt
from harness.drive.process import DEFAULT_TIMEOUT
from harness.errors import ConformError
from harness.reports.text import render
from harness.safetext import printable, shorten
from harness.seconds import Seconds

if TYPE_CHECKING:  # the search (hypothesis) is imported when `conform fuzz` runs, not at start-up
    from harness.fuzz.loop import Finding, FuzzRecord

#: Streams tried while shrinking a difference, by default (`harness.fuzz.loop.SHRINK_STEPS`).
SHRINK_DEFAULT = 150

#: Characters of each recording line shown in the report (the saved recording has them all).
_LINE_CHARS = 300
_STREAM_LINES = 60


class _Progress:
    """`fuzz: 120 streams, 8 s` on a terminal's stderr, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.drawn = False

    def __call__(self, count: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.drawn_at < 0.1:
            return
        self.drawn_at = now
        self.stream.write(f"\rfuzz: {count} streams, {now - self.started:.0f} s\033[K")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _stream_lines(finding: Finding) -> list[str]:
    lines = finding.recording.splitlines()
    shown = [
        f"  {number:>4} | {printable(shorten(line, _LINE_CHARS))}"
        for number, line in enumerate(lines[:_STREAM_LINES], start=1)
    ]
    if len(lines) > _STREAM_LINES:
        shown.append(f"  … and {len(lines) - _STREAM_LINES} more line(s)")
    return shown


def _report(record: FuzzRecord, *, label: str, save: Path | None) -> list[str]:
    finding = record.finding
    if finding is None:
        return [
            f"fuzz: no difference from the reference in {record.streams} streams "
            f"({record.seconds:.1f} s, --seed {record.seed})"
        ]
    lines = render(finding.results)
    payloads = len(finding.stream.payloads)
    lines.append(f"the stream, shrunk to {payloads} payload(s) (the .sse recording above):")
    lines += _stream_lines(finding)
    if save is not None:
        from harness.fuzz.loop import save_finding

        case = save_finding(finding, save, seed=record.seed, label=label)
        lines.append(f"saved: {case.recording} and {case.golden}")
    else:
        lines.append("keep it as a case of your suite with --save DIR")
    lines.append(
        f"fuzz: {label} differs from the reference, found in {record.streams} streams "
        f"({record.seconds:.1f} s, --seed {record.seed})"
    )
    return lines


@click.command("fuzz")
@click.argument("target", type=opt.TargetType(), required=False)
@click.option(
    "--exec",
    "exec_command",
    metavar="'COMMAND ARGS'",
    help="Fuzz a program speaking conform's line protocol (docs/protocol.md) instead of TARGET.",
)
@click.option(
    "--in-process",
    is_flag=True,
    help="Run TARGET inside conform's own process: faster, but a hang or crash stops the run.",
)
@click.option(
    "--examples",
    type=click.IntRange(min=1),
    metavar="N",
    help="Run N generated streams (default: 200 when --time is not given).",
)
@click.option(
    "--time",
    "seconds",
    type=Seconds(),
    metavar="SECONDS",
    help="Generate streams for this long instead (shrinking a difference takes a little more).",
)
@click.option(
    "--shrink",
    "shrink_steps",
    type=click.IntRange(min=0),
    default=SHRINK_DEFAULT,
    show_default=True,
    metavar="N",
    help="Streams tried while shrinking a difference (0: report the first stream as found).",
)
@opt.modes
@click.option(
    "--streams",
    "kind",
    type=click.Choice(("any", "valid", "broken")),
    default="any",
    show_default=True,
    help="Generate valid streams, streams broken in one place (R6's shape errors), or both.",
)
@opt.gating
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Search with N worker processes at once (worker K draws with seed + K).",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Time allowed for each call into the target before its stream is timed-out.",
)
@click.option(
    "--save",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write a difference found as a case of the suite at DIR (recordings/ and golden/).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
def fuzz_command(
    target: str | None,
    exec_command: str | None,
    in_process: bool,
    examples: int | None,
    seconds: float | None,
    shrink_steps: int,
    modes: tuple[str, ...],
    seed: int,
    kind: str,
    strict: bool,
    chosen_points: tuple[tuple[str, str], ...],
    level: str,
    jobs: int,
    timeout: float,
    save: Path | None,
    quiet: bool,
) -> None:
    """Fuzz TARGET (module:Class, module:factory or file.py:Class) with generated streams.

    Each stream, drawn from a model of llama-server streams (docs/fuzz.md), runs through TARGET
    and the reference in every mode asked for; the first difference is shrunk to a small stream
    and shown like a 'conform run' failure.

    Exits 0 when TARGET agrees with the reference on every stream, 1 on a difference (a
    mismatch, crash or timeout), 2 on a usage or setup error.
    """
    if examples is not None and seconds is not None:
        raise ConformError("give --examples N or --time SECONDS, not both")
    options = RunOptions(
        target=target,
        exec_command=exec_command,
        in_process=in_process,
        timeout=timeout,
        jobs=jobs,
        modes=modes,
        seed=seed,
        strict=strict,
        chosen_points=chosen_points,
        level=level,
    )
    from harness.fuzz.loop import FuzzRequest, run_fuzz

    request = FuzzRequest(
        options=options,
        examples=200 if examples is None and seconds is None else examples,
        seconds=seconds,
        broken={"any": None, "valid": False, "broken": True}[kind],
        shrink_steps=shrink_steps,
    )
    if save is not None:
        save = Path(os.path.abspath(save))
    progress = _Progress(sys.stderr, enabled=not quiet and sys.stderr.isatty())
    try:
        record = run_fuzz(request, on_stream=progress)
    finally:
        progress.close()
    label = options.label
    for line in _report(record, label=label, save=save):
        click.echo(line)
    click.get_current_context().exit(1 if record.finding is not None else 0)
