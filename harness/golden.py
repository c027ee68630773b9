"""Golden files: building them with the reference, their one serialization, reading and writing.

`build_golden` drives `reference.Assembler` through the same `harness.target` steps as any target,
so a golden file is exactly what a perfect target produces. `serialize` is the only formatting of a
golden file (contract section 4), used by `conform golden update` and by the syrupy extension
(`harness.snapshot`) alike; writes are atomic.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference
from harness import golden_stream
from harness.errors import GoldenError
from harness.golden_schema import check_golden
from harness.recording import case_id_of, iter_payloads, read_info
from harness.suite import Case, Suite
from harness.target import finish_step, push_step

SCHEMA = 1


def build_golden(case: Case) -> dict[str, Any]:
    """The golden document of `case`, as the reference assembles its recording."""
    capped = read_info(case.recording).thinking_capped
    assembler = reference.Assembler()
    steps: list[dict[str, Any]] = []
    golden: dict[str, Any] = {
        "schema": SCHEMA,
        "recording": case.recording_name,
        "thinking_capped": capped,
        "steps": steps,
    }
    for payload in iter_payloads(case.recording):
        step = push_step(assembler, payload.data, payload.line)
        steps.append(step)
        if "error" in step:
            return golden
    golden["finish"] = finish_step(assembler, capped)
    return golden


def serialize(golden: dict[str, Any]) -> str:
    """A golden document as its file's text: two-space indent, UTF-8, trailing newline."""
    return json.dumps(golden, indent=2, ensure_ascii=False) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path, text: str | Iterable[str]) -> None:
    """Replace `path` with `text` in one step: a reader sees the old file or the new, never half.

    `text` may come in pieces (an iterable of strings), written as they come.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            if isinstance(text, str):
                out.write(text)
            else:
                out.writelines(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_shape(path: Path, golden: Any, *, hint: str) -> None:
    golden_stream.check_header(path, golden, schema=SCHEMA, hint=hint)
    check_golden(path, golden, hint=hint)
    steps = golden["steps"]
    for index, step in enumerate(steps[:-1]):
        if "error" in step:
            raise GoldenError(path, f"steps[{index + 1}] follows an error step", hint=hint)
    if steps and "error" in steps[-1]:
        if "finish" in golden:
            raise GoldenError(
                path, "a golden file that ends in an error step has no finish", hint=hint
            )
    elif "finish" not in golden:
        raise GoldenError(path, "'finish' is missing", hint=hint)


def _regenerate(case: Case) -> str:
    return f"golden files are generated: run 'conform golden update -k {case.case_id}'"


def read_golden(case: Case) -> dict[str, Any]:
    """The golden document of `case`; GoldenError when it is missing or malformed.

    A file above `golden_stream.STREAM_ABOVE` bytes is not parsed whole: its `steps` is then a
    lazy `GoldenSteps`, read from disk on each iteration (`harness.golden_stream`).
    """
    path = case.golden
    try:
        if path.stat().st_size > golden_stream.STREAM_ABOVE:
            return golden_stream.read_streamed(path, schema=SCHEMA)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GoldenError(
            path,
            f"no golden file for '{case.case_id}'",
            hint=f"run 'conform golden update -k {case.case_id}'",
        ) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise GoldenError(
            path,
            f"not valid UTF-8 (line {line})",
            hint=_regenerate(case),
        ) from None
    except OSError as exc:  # a folder, no permission: one line, never a traceback
        raise GoldenError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        golden = golden_stream.decode(text)
    except json.JSONDecodeError as exc:
        raise GoldenError(
            path,
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            hint=_regenerate(case),
        ) from None
    except RecursionError:
        raise GoldenError(path, "nests too deep to be a golden file") from None
    _check_shape(path, golden, hint=_regenerate(case))
    return golden  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class GoldenChange:
    """What `update` did, or `check` found, for one case."""

    case_id: str
    path: Path
    status: str  # "created", "changed", "unchanged", "missing", "drifted", "orphaned"


def _current_text(path: Path) -> str | None:
    """The file's text (invalid UTF-8 replaced, so that it differs), or None when it is missing."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GoldenError(path, f"cannot be read: {exc.strerror or exc}") from None


def _is_long(case: Case) -> bool:
    """A recording too long to hold its golden document in memory (it is then streamed)."""
    try:
        return case.recording.stat().st_size > golden_stream.STREAM_ABOVE
    except OSError:
        return False  # the usual path names the problem


def update(cases: Iterable[Case]) -> list[GoldenChange]:
    """Regenerate the golden files of `cases`, writing only those whose text changes."""
    changes = []
    for case in cases:
        if _is_long(case):
            status = golden_stream.update_streamed(case, schema=SCHEMA)
            changes.append(GoldenChange(case.case_id, case.golden, status))
            continue
        text = serialize(build_golden(case))
        old = _current_text(case.golden)
        if old == text:
            changes.append(GoldenChange(case.case_id, case.golden, "unchanged"))
            continue
        status = "created" if old is None else "changed"
        write_atomically(case.golden, text)
        changes.append(GoldenChange(case.case_id, case.golden, status))
    return changes


def check(
    suite: Suite, cases: Iterable[Case], patterns: tuple[str, ...] = ()
) -> list[GoldenChange]:
    """Problems only: golden files missing, drifted, or orphaned (among ids matching `patterns`)."""
    problems = []
    for case in cases:
        if _is_long(case):
            found = golden_stream.check_streamed(case, schema=SCHEMA)
            if found is not None:
                problems.append(GoldenChange(case.case_id, case.golden, found))
            continue
        old = _current_text(case.golden)
        if old is None:
            problems.append(GoldenChange(case.case_id, case.golden, "missing"))
        elif old != serialize(build_golden(case)):
            problems.append(GoldenChange(case.case_id, case.golden, "drifted"))
    for path in suite.orphaned_golden(patterns):
        case_id = case_id_of(suite.golden_dir, path)
        problems.append(GoldenChange(case_id, path, "orphaned"))
    return problems
