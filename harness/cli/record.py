"""`conform record`: capture one streamed chat completion from a running llama-server."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from harness.cli import options as opt
from harness.errors import ConformError
from harness.files import interruptible
from harness.seconds import Seconds
from harness.suite import golden as golden_files
from harness.suite.cases import Suite, writable_root

_DEFAULT_TIMEOUT = 300.0


class ServerURL(click.ParamType[str]):
    """The server's base URL, e.g. http://127.0.0.1:8080."""

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from harness.capture import live as recorder  # httpx: only when `record` runs

        try:
            recorder.normalize_url(str(value))
        except ConformError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class RecordingName(click.ParamType[str]):
    """A recording's name below recordings/, with `/` for subfolders and no extension."""

    name = "NAME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from harness.capture import live as recorder  # httpx: only when `record` runs

        try:
            recorder.case_path(Path("."), str(value))
        except ConformError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class RequestFile(click.ParamType[tuple[str, dict[str, Any]]]):
    """A JSON file holding one chat completion request object; gives (path as typed, object)."""

    name = "REQUEST.json"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, dict[str, Any]]:
        if isinstance(value, tuple):
            return value
        from harness.capture import live as recorder  # httpx: only when `record` runs

        try:
            return str(value), recorder.load_request(Path(value))
        except ConformError as exc:
            self.fail(str(exc), param, ctx)


class _Progress:
    """`recording NAME: N payloads, B bytes` on one rewritten stderr line, only on a terminal."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tty = sys.stderr.isatty()
        self._last = 0.0
        self._shown = False
        self._text = ""

    def __call__(self, payloads: int, nbytes: int) -> None:
        self._text = f"recording {self._name}: {payloads} payloads, {nbytes} bytes"
        now = time.monotonic()
        if self._tty and now - self._last >= 0.1:
            self._last = now
            self._shown = True
            click.echo(f"\r{self._text}\x1b[K", err=True, nl=False)

    def close(self) -> None:
        if self._shown:
            click.echo(f"\r{self._text}\x1b[K", err=True)


@click.command("record")
@click.argument("url", type=ServerURL())
@click.argument("name", type=RecordingName())
@click.option(
    "--request",
    "request",
    type=RequestFile(),
    required=True,
    metavar="REQUEST.json",
    help='JSON file with the chat completion request (e.g. {"messages": [...], "max_tokens": 40}); '
    '"stream": true is forced.',
)
@click.option(
    "--suite",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    multiple=True,
    callback=opt.given_once,  # a second --suite would be written into instead, without a word
    metavar="DIR",
    help="Suite folder; the capture goes to DIR/recordings/NAME.http. Default: the shipped "
    "suite of a source checkout (never an installed package: pass --suite there).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing recording.")
@click.option(
    "--keep-errors",
    is_flag=True,
    help="Save the capture even when the exchange failed (non-200, not an event stream, cut off, "
    "timed out after the answer began); still exits 1.",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=_DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Bound on the whole exchange, from connecting to the last byte.",
)
@click.option(
    "--note",
    "notes",
    multiple=True,
    metavar="TEXT",
    help="Extra `# ` comment line for the capture (repeatable), e.g. the chat template used.",
)
@click.option(
    "--thinking-capped",
    is_flag=True,
    help="Add the `thinking_capped: true` directive (the harness then calls finish(True)).",
)
@click.option(
    "--golden",
    is_flag=True,
    help="Also write the case's golden file with the reference assembler and summarize it.",
)
def record(
    url: str,
    name: str,
    request: tuple[str, dict[str, Any]],
    suite: Path | None,
    force: bool,
    keep_errors: bool,
    timeout: float,
    notes: tuple[str, ...],
    thinking_capped: bool,
    golden: bool,
) -> None:
    """Record a streamed chat completion from llama-server at URL as recordings/NAME.http.

    Posts REQUEST.json to URL/v1/chat/completions and writes the exchange in the `.http` form of
    contract section 1: provenance comments (server build and model from /props, date, command),
    the request as sent, the response head, and the event stream byte for byte. The file is
    written only when the stream ended properly ([DONE], a finish_reason, or a server error
    payload), and atomically: a failed or interrupted recording leaves nothing behind.

    \b
    Example:
      conform record http://127.0.0.1:8080 --request req.json llama-server/content_stop

    Exit status: 0 recorded, 1 the recording failed (server unreachable, non-200, not an event
    stream, cut off, timed out), 2 usage error (bad URL or NAME, bad request file, file exists,
    a recording of that name already there as NAME.sse), 130 interrupted (Ctrl-C; 143 SIGTERM).
    See docs/recording.md for running llama-server locally.
    """
    request_file, request_obj = request
    suite = writable_root(suite, command="record")
    options: dict[str, object] = {
        "--timeout": None if timeout == _DEFAULT_TIMEOUT else f"{timeout:g}",
        "--keep-errors": keep_errors,
        "--thinking-capped": thinking_capped,
    }
    all_notes = (("thinking_capped: true",) if thinking_capped else ()) + notes
    from harness.capture import live as recorder  # httpx: only when `record` runs

    if golden and not force:  # a golden file of that name is not replaced without --force
        _, case_id = recorder.case_path(suite, name)
        existing = Suite(suite).golden_path(case_id)
        if existing.exists():
            raise ConformError(f"{existing} already exists", hint="pass --force to overwrite it")
    progress = _Progress(name)
    with interruptible():
        try:
            result = recorder.record(
                url,
                request_obj,
                suite_dir=suite,
                name=name,
                timeout=timeout,
                force=force,
                keep_errors=keep_errors,
                command=recorder.command_line(
                    url, name, request_file=request_file, options=options
                ),
                notes=all_notes,
                on_progress=progress,
            )
        finally:
            progress.close()

    if result.server_error is not None:
        ended = f"server error: {result.server_error}"
    else:
        ended = result.ended_by
        if result.finish_reason is not None:
            ended += f", finish_reason {result.finish_reason}"
    click.echo(
        f"Recorded {result.path}: {result.payloads} payloads, {result.body_bytes} bytes ({ended})."
    )
    if golden:
        with interruptible():
            golden_path = _write_golden(suite, result.case_id)
        click.echo(_summarize_golden(golden_path))


def _write_golden(suite_dir: Path, case_id: str) -> Path:
    """Write golden/<case_id>.json for one case with the reference assembler; return its path."""
    suite = Suite.open(suite_dir)
    for case in suite.cases((case_id,)):
        if case.case_id == case_id:
            golden_files.update([case])
            return case.golden
    raise ConformError(
        f"no case '{case_id}' in {suite.root}", hint="this is a bug in conform record"
    )


def _summarize_golden(path: Path) -> str:
    """One line: payloads pushed, events by type, and how the case finished."""
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("steps", [])
    counts: Counter[str] = Counter()
    error = None
    for step in steps:
        for event in step.get("events", []):
            counts[str(event.get("type"))] += 1
        if "error" in step:
            error = step["error"]
    finish = data.get("finish") or {}
    finish_reason = None
    if "completion" in finish:
        finish_reason = finish["completion"].get("finish_reason")
    elif "error" in finish:
        error = finish["error"]
    events = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"
    parts = [f"Golden {path}: {len(steps)} payloads", f"events: {events}"]
    if finish_reason is not None:
        parts.append(f"finish_reason {finish_reason}")
    if error is not None:
        detail = error.get("kind", "?")
        if error.get("message") is not None:
            detail += f" ({error['message']})"
        parts.append(f"error: {detail}")
    return "; ".join(parts) + "."
