"""A distinct problem as a Markdown bug report to paste upstream: what happens, what the spec
says, the stream **as pushed**, and the command that reproduces it.

The stream is what the target was given: in `plain` mode the recording's payloads, in a mutating
mode the payloads that mode pushed (made again from the seed, the case and the payload's index,
`harness.check.modes.mutate`), for `truncated` the payloads up to the cut. Each payload is one
`data:` event, and the stream stops after the payload the failure shows at (a failure at the
finish shows the whole stream). conform's own comment lines (`: pins: ...`) are never part of it;
a case about the event-stream framing itself (it pins `SSE`) shows its event stream as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from harness.check.modes import PLAIN, TRUNCATED, mutate
from harness.check.results import CaseResult
from harness.errors import ConformError
from harness.reports.causes import RULE_TEXT
from harness.safetext import printable, shorten, shorten_with_size, shown
from harness.suite.recording import iter_payloads, read_info


class Reported(Protocol):
    """What a bug report reads of a problem (`harness.reports.problems.Problem`)."""

    @property
    def title(self) -> str: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def example(self) -> CaseResult: ...
    @property
    def command(self) -> str: ...
    @property
    def results(self) -> tuple[CaseResult, ...]: ...
    @property
    def cases(self) -> tuple[str, ...]: ...
    @property
    def modes(self) -> tuple[str, ...]: ...
    @property
    def real_cases(self) -> tuple[str, ...]: ...
    @property
    def expected(self) -> Sequence[tuple[str, str]]: ...


#: What the stream of a bug report holds at most: payloads, characters.
STREAM_PAYLOADS = 40
STREAM_CHARS = 4_000
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def failing_step(result: CaseResult) -> int | None:
    """The index of the payload whose push showed the failure (None: at the finish)."""
    for m in result.mismatches:
        return m.step
    if result.crash is not None:
        return result.crash.step
    return None


def pushed(result: CaseResult, recording: Path) -> list[str]:
    """The payloads the run of `result` pushed, up to the one its failure shows at."""
    payloads = [p.data for p in iter_payloads(recording)]
    if result.mode == TRUNCATED and result.cut is not None:
        payloads = payloads[: result.cut]
    step = failing_step(result)
    if step is not None:
        payloads = payloads[: step + 1]
    if result.mode in (PLAIN, TRUNCATED):
        return payloads
    seed = result.seed if result.seed is not None else 0
    return [
        mutate(result.mode, data, seed=seed, case_id=result.case_id, step=index)
        for index, data in enumerate(payloads)
    ]


def event(data: str) -> str:
    """One payload as an event-stream event: a `data:` line per line of it, then a blank line."""
    return "".join(f"data: {line}\n" for line in _LINE_BREAK.split(data)) + "\n"


def _raw_stream(recording: Path) -> str:
    """A recording's event stream as written, without conform's leading comment lines (and, for
    an `.http` capture, without the request and the response head)."""
    text = recording.read_bytes().decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    start = 0
    if recording.suffix == ".http":
        blanks = 0
        while start < len(lines) and blanks < 3:  # comments + request, body, response head
            if not lines[start].strip("\r\n"):
                blanks += 1
            start += 1
    else:
        while start < len(lines) and lines[start].startswith(":"):
            start += 1
    return "".join(lines[start:])


def stream_text(result: CaseResult, recording: Path) -> tuple[str, str]:
    """(the stream as pushed, a note on what it is), ready for a code block."""
    try:
        if result.mode == PLAIN and "SSE" in result.pins:
            body = _raw_stream(recording)
            note = "the recording's event stream as written (CR shown as \\x0d)"
            return shorten_with_size(printable(body, keep_lines=True), STREAM_CHARS), note
        payloads = pushed(result, recording)
        whole = failing_step(result) is None and result.mode != TRUNCATED
    except (ConformError, OSError):
        return "(the recording cannot be read)", "unavailable"
    shown_payloads = payloads[:STREAM_PAYLOADS]
    body = "".join(event(data) for data in shown_payloads)
    if len(payloads) > STREAM_PAYLOADS:
        body += f"… ({len(payloads) - STREAM_PAYLOADS} more payloads)\n"
    elif whole and b"[DONE]" in _tail(recording):
        body += "data: [DONE]\n\n"
    how = "as recorded" if result.mode in (PLAIN, TRUNCATED) else f"as {result.mode} pushed them"
    if result.mode == TRUNCATED:
        note = f"the payloads {how}, cut after payload {len(payloads)}: the server closed there"
    elif whole:
        note = f"the payloads {how}"
    else:
        note = f"the payloads {how}, up to the one the failure shows at (the stream goes on)"
    return shorten_with_size(printable(body.rstrip("\n"), keep_lines=True), STREAM_CHARS), note


def _tail(recording: Path) -> bytes:
    try:
        with recording.open("rb") as stream:
            stream.seek(0, 2)
            size = stream.tell()
            stream.seek(max(0, size - 4096))
            return stream.read()
    except OSError:
        return b""


def _what_happens(result: CaseResult) -> list[str]:
    lines = []
    if result.mismatches:
        m = result.mismatches[0]
        where = f"at the payload on line {m.line}" if m.line is not None else "at finish"
        lines.append(f"In `{result.case_id}` ({result.mode} mode), {where}, `{m.path}`:")
        lines.append(f"- expected: `{shown(m.expected, 300)}`")
        lines.append(f"- got: `{shown(m.actual, 300)}`")
        if m.said is not None:
            lines.append(f"- the assembler raised `{shorten(m.said, 300)}`")
        if len(result.mismatches) > 1:
            lines.append(f"- and {len(result.mismatches) - 1} more difference(s) in this run")
    elif result.crash is not None:
        crash = result.crash
        verb = "timed out" if "timed" in str(result.status) else "crashed"
        lines.append(
            f"In `{result.case_id}` ({result.mode} mode) the assembler {verb} at "
            f"{crash.stage}: `{shorten(crash.message, 300)}`"
        )
        origin = crash.origin
        if origin is not None:
            whose = {"client": f"the client ({origin.package})", "adapter": "the adapter"}
            lines.append(
                f"- in {whose.get(origin.owner, 'its own code')}: `{origin.frame}`, "
                f"in `{origin.function}`"
            )
    return lines


def markdown_report(problem: Reported, *, recording: Path, refusal: str | None) -> str:
    """The Markdown bug report of `problem`, whose example's recording is at `recording`;
    `refusal`: the reference's reason for refusing the input, for invalid input answered."""
    example = problem.example
    cases = problem.cases
    lines = [f"### Stream assembly: {problem.title}", "", "**What happens**", ""]
    lines += _what_happens(example)
    lines += ["", "**What the spec says**", ""]
    if problem.rule is not None and problem.rule in RULE_TEXT:
        lines.append(f"{problem.rule}: {RULE_TEXT[problem.rule]} (conform's spec, docs/spec.md)")
    else:
        lines.append("The golden file of the case, made by conform's reference assembler.")
    if refusal is not None:
        lines.append(f"The reference refuses this input with `protocol`: {shorten(refusal, 300)}.")
    if example.real:
        origin = _origin(recording)
        lines.append(f"This stream is a real capture{origin}: valid input a server sent.")
    stream, note = stream_text(example, recording)
    seed = f", --seed {example.seed}" if example.seed is not None and example.mode != PLAIN else ""
    lines += [
        "",
        f"**Stream as pushed** (`{example.case_id}`, {example.mode} mode{seed}: {note})",
        "",
        "```",
        stream,
        "```",
        "",
        f"Reproduce: `{problem.command}`",
        "",
        f"Seen in {len(problem.results)} run(s): {len(cases)} case(s) ({', '.join(cases[:8])}"
        + (f", and {len(cases) - 8} more" if len(cases) > 8 else "")
        + f"), in {', '.join(problem.modes)}.",
    ]
    if problem.real_cases:
        lines.append(f"Real captures among them: {', '.join(problem.real_cases)}.")
    for reason, source in problem.expected:
        lines.append(f"The baseline says: {printable(reason)} ({source}).")
    return "\n".join(lines) + "\n"


def _origin(recording: Path) -> str:
    try:
        origin = read_info(recording).origin
    except ConformError:
        return ""
    return f" from {origin}" if origin else ""
