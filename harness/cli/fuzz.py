"""`conform fuzz`: generated streams through a target and the reference, a difference shrunk.

The command parses its options, calls `harness.fuzz.loop.run_fuzz` once, and renders the record:
on a difference, the failing results as `conform run` shows them (`harness.reports.text`), then the
shrunk stream itself, printed before anything is written; with `--save DIR` the case is then
written (`harness.fuzz.save`), whole or not at all; otherwise one line saying how many streams
agreed. The last line says how many streams ran, how fast, and how much of the model's catalogue
they exercised. Bad options, and a case that cannot be saved, are one `Error:` line (exit 2).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from harness.check.options import RunOptions
from harness.cli import options as opt
from harness.drive.process import DEFAULT_TIMEOUT
from harness.errors import ConformError, Interrupted
from harness.reports.text import render
from harness.safetext import printable, shorten
from harness.seconds import Seconds

if TYPE_CHECKING:  # the search is imported when `conform fuzz` runs, not at start-up
    from harness.fuzz.loop import Finding, FuzzRecord

#: Streams tried while shrinking a difference, by default (`harness.fuzz.request.SHRINK_STEPS`).
SHRINK_DEFAULT = 2000

#: Characters of each recording line shown in the report (the saved recording has them all).
_LINE_CHARS = 300
_STREAM_LINES = 60


class _Progress:
    """`fuzz: 1200 streams, 8 s; features 90/95, ...` on a terminal's stderr, redrawn at most
    ten times a second."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.drawn = False

    def __call__(self, count: int, coverage: Callable[[], str]) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.drawn_at < 0.1:
            return
        self.drawn_at = now
        line = f"fuzz: {count} streams, {now - self.started:.0f} s; {coverage()}"
        self.stream.write(f"\r{line}\033[K")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _stream_lines(finding: Finding) -> list[str]:
    lines = finding.listing.splitlines()
    shown = [
        f"  {number:>4} | {printable(shorten(line, _LINE_CHARS))}"
        for number, line in enumerate(lines[:_STREAM_LINES], start=1)
    ]
    if len(lines) > _STREAM_LINES:
        shown.append(f"  … and {len(lines) - _STREAM_LINES} more line(s)")
    return shown


def _throughput(record: FuzzRecord) -> str:
    """`2808 streams in 10.0 s: 281 streams/s, 1.19 ms of CPU a stream`: the search's rate (from
    its first stream), and the CPU of every process of the run (with a finding: in all, shrinking
    included)."""
    rate = record.streams / record.searched if record.searched > 0 else 0.0
    took = f"{record.streams} streams in {record.searched:.1f} s: {rate:.0f} streams/s"
    if record.finding is not None:
        return f"{took}; {record.cpu_seconds:.1f} s of CPU in all, settling the finding included"
    cpu = record.cpu_seconds / record.streams * 1000 if record.streams else 0.0
    return f"{took}, {cpu:.2f} ms of CPU a stream"


def reproduce(finding: Finding, label_args: list[str], request_args: list[str]) -> str:
    """The command that draws the finding's stream again (the first `number + 1` of its seed)."""
    words = ["conform", "fuzz", *label_args, "--seed", str(finding.seed)]
    words += [*request_args, "--examples", str(finding.number + 1)]
    return " ".join(shlex.quote(word) for word in words)


def _report(record: FuzzRecord, *, command: str, save: Path | None) -> list[str]:
    """The finding's lines, printed before anything is written."""
    finding = record.finding
    assert finding is not None
    lines = render(finding.results, where=lambda _: "(the stream below)")
    if finding.flaky:
        lines.append(
            f"FLAKY: the target differed on this stream in {finding.reproduced} of "
            f"{finding.runs} runs: not shrunk, and not kept as a case"
        )
    elif finding.interrupted:
        lines.append("shrinking interrupted: the smallest stream so far, not checked again")
    payloads = len(finding.stream.payloads)
    was = f", from {record.found_size[0]}" if record.found_size is not None else ""
    what = "(the .sse recording of the case)" if not finding.checked else "(as checked)"
    lines.append(f"the stream, {payloads} payload(s){was} {what}:")
    lines += _stream_lines(finding)
    lines.append(f"reproduce: {command}")
    if save is None and not finding.flaky:
        lines.append(f"keep it as the case {finding.case_id} of your suite with --save DIR")
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
    help="Run TARGET inside conform's own process (each -j search's): faster, but a hang or "
    "crash stops the run.",
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
    help="Generate streams for this long, from the first stream (shrinking takes a little more).",
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
    help="Run N searches at once, each in a process of its own (search K draws with seed + K).",
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
    help="Keep a difference found as a case of the suite at DIR (recordings/ and golden/).",
)
@click.option(
    "--force", is_flag=True, help="With --save: replace a case of the same name already there."
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
    force: bool,
    quiet: bool,
) -> None:
    """Fuzz TARGET (module:Class, module:factory or file.py:Class) with generated streams.

    Each stream, drawn from a model of llama-server streams (docs/fuzz.md), runs through TARGET
    and the reference in plain mode and one other; the first difference is checked again, shrunk
    to a small stream and shown like a 'conform run' failure.

    Exits 0 when TARGET agrees with the reference on every stream, 1 on a difference (a
    mismatch, crash or timeout; a flaky one too), 2 on a usage or setup error (a case --save
    cannot write included), 130 on Ctrl-C (a difference found is shown, and saved, first).
    """
    if examples is not None and seconds is not None:
        raise ConformError("give --examples N or --time SECONDS, not both")
    options = RunOptions(
        target=target,
        exec_command=exec_command,
        in_process=in_process,
        timeout=timeout,
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
        jobs=jobs,
    )
    if save is not None:
        save = Path(os.path.abspath(save))
    progress = _Progress(sys.stderr, enabled=not quiet and sys.stderr.isatty())
    try:
        record = run_fuzz(request, on_stream=progress)
    finally:
        progress.close()
    finding = record.finding
    error: ConformError | None = None
    if finding is not None:
        target_args = [target] if target is not None else ["--exec", exec_command or ""]
        if in_process:
            target_args.append("--in-process")
        again = reproduce(finding, target_args, _request_args(options, kind, modes))
        for line in _report(record, command=again, save=save):
            click.echo(line)
        sys.stdout.flush()  # the finding is on screen before anything is written
        if save is not None:
            error = _save(finding, save, force=force)
    click.echo(_last_line(record, label=options.label))
    if error is not None:
        raise error
    if record.interrupted is not None:
        raise Interrupted(2)  # Ctrl-C: exit 130, after what was found is shown and kept
    click.get_current_context().exit(1 if finding is not None else 0)


def _request_args(options: RunOptions, kind: str, modes: tuple[str, ...]) -> list[str]:
    """The options besides the target and seed that make the same streams."""
    words: list[str] = []
    for mode in modes:
        words += ["--mode", mode]
    if kind != "any":
        words += ["--streams", kind]
    return [*words, *(w for w in options.rerun_args() if w != "--in-process")]


def _save(finding: Finding, root: Path, *, force: bool) -> ConformError | None:
    """Save the finding; the error that stopped it, if one did (after the report is out)."""
    from harness.fuzz.save import save_finding

    try:
        saved = save_finding(finding, root, force=force)
    except ConformError as exc:
        return exc
    done = {"created": "saved", "replaced": "saved (replacing the case there)"}
    said = done.get(saved.status, "already saved, unchanged")
    click.echo(f"{said}: {saved.recording} and {saved.golden}")
    return None


def _last_line(record: FuzzRecord, *, label: str) -> str:
    took = f"({_throughput(record)}; {record.coverage})"
    finding = record.finding
    stopped = f", interrupted ({record.interrupted})" if record.interrupted else ""
    if finding is None:
        return f"fuzz: no difference from the reference{stopped} {took}"
    return (
        f"fuzz: {label} differs from the reference in stream {finding.number + 1} of --seed "
        f"{finding.seed}{stopped} {took}"
    )
