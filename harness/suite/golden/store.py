"""Golden files: building them with the reference, their one serialization, reading and writing.

`build_golden` drives the plain reference (`reference.PlainAssembler`) through the same
`harness.drive.inprocess` steps as any target, so a golden file is exactly what a perfect target
produces. `serialize` is the only
formatting of a golden file (contract section 4), used by `conform golden update` and by the syrupy
extension (`tests/suite/golden/snapshot.py`) alike; writes are atomic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference
from harness.drive.inprocess import finish_step, push_step
from harness.errors import GoldenError, RecordingError
from harness.files import read_small, remove_stale_temp_file, stale_temp_files, write_atomically
from harness.suite.cases import Case, Suite
from harness.suite.classes import InputClass, class_of, class_of_bytes
from harness.suite.golden import stream as golden_stream
from harness.suite.golden.schema import check_golden
from harness.suite.golden.types import decode_typed
from harness.suite.recording import case_id_of, iter_payloads, read_info
from harness.suite.sse import Payload
from reference import choices as choices_of
from reference.choices import Choices

#: The golden file schema (docs/golden-files.md). 2: `pins`; `choices` and `alternatives` in the
#: cases that pin an implementation-defined point.
SCHEMA = 2


def outcome(
    payloads: Iterable[Payload],
    capped: bool,
    choices: Choices = choices_of.REFERENCE,
    *,
    assembler: Callable[[Choices], Any] = reference.PlainAssembler,
) -> dict[str, Any]:
    """The steps and finish the reference makes of `payloads` under `choices`.

    conform fuzz passes the fast reference (`reference.Assembler`), held to the plain one by
    tests/assembler/test_differential.py; golden files are built by the plain one.
    """
    machine = assembler(choices)
    steps: list[dict[str, Any]] = []
    found: dict[str, Any] = {"steps": steps}
    for payload in payloads:
        step = push_step(machine, payload.data, payload.line)
        steps.append(step)
        if "error" in step:
            _any_message(step["error"], choices)
            return found
    found["finish"] = finish_step(machine, capped)
    return found


def with_alternatives(
    points: list[str], outcome_of: Callable[[Choices], dict[str, Any]]
) -> dict[str, Any]:
    """The outcome under the reference's own choices, with `choices` and one `alternatives`
    entry per other distinct outcome of the combinations of `points` (docs/golden-files.md)."""
    outcomes: dict[str, tuple[list[dict[str, str]], dict[str, Any]]] = {}
    for combination in choices_of.combinations(points):
        found = outcome_of(choices_of.REFERENCE.replace(combination))
        outcomes.setdefault(_key(found), ([], found))[0].append(combination)
    own, *others = outcomes.values()  # dicts keep order: the reference's combination came first
    return {
        "choices": own[0],
        "alternatives": [{"choices": combos, **found} for combos, found in others],
    } | own[1]


def _any_message(error: dict[str, Any], choices: Choices) -> None:
    """A server error without a message, under I8 `default`, holds no `message`: the text an
    implementation supplies is its own, and any passes (the reference's is `DEFAULT_MESSAGE`)."""
    if choices.I8 == "default" and error.get("message") == choices_of.DEFAULT_MESSAGE:
        del error["message"]


def _key(outcome: dict[str, Any]) -> str:
    return json.dumps(outcome, sort_keys=True)


def build_golden(case: Case) -> dict[str, Any]:
    """The golden document of `case`, as the reference assembles its recording.

    A case that pins implementation-defined points is assembled under every combination of their
    allowed outcomes: the reference's own outcome is the document's `steps` and `finish`, every
    other distinct one an entry of `alternatives`, each with the `choices` that give it.
    """
    info = read_info(case.recording)
    golden = golden_stream.document_header(case, info, schema=SCHEMA)
    points = [pin for pin in info.pins if pin in choices_of.OUTCOMES]

    def outcome_of(choices: Choices) -> dict[str, Any]:
        return outcome(iter_payloads(case.recording), info.thinking_capped, choices)

    if not points:
        return golden | outcome_of(choices_of.REFERENCE)
    document = with_alternatives(points, outcome_of)
    _check_pins(case, points, document)
    return golden | document


def matters(point: str, outcome_of: dict[str, object]) -> bool:
    """True when some two combinations of choices that differ only at `point` give different
    outcomes (`outcome_of`: each combination, as sorted JSON, to what tells its outcome apart)."""
    seen: dict[str, set[object]] = {}
    for text, outcome in outcome_of.items():
        others = {p: v for p, v in json.loads(text).items() if p != point}
        seen.setdefault(json.dumps(others, sort_keys=True), set()).add(outcome)
    return any(len(outcomes) > 1 for outcomes in seen.values())


def _check_pins(case: Case, points: list[str], document: dict[str, Any]) -> None:
    """RecordingError unless each pinned point changes the outcome: a tag must mean something.

    A point may matter only beside another point's other outcome (an integer beyond 2^53 read
    exactly, and only then a deep value ignored further on), so a point counts when some two
    combinations that differ only there give different outcomes.
    """
    which: dict[str, object] = {
        json.dumps(combination, sort_keys=True): number
        for number, entry in enumerate([document, *document["alternatives"]])
        for combination in entry["choices"]
    }
    for point in points:
        if not matters(point, which):
            raise RecordingError(
                case.recording,
                f"pins {point}, but every outcome of {point} gives the same result",
                hint=f"remove {point} from its 'pins:' line, or make the case depend on it",
            )


def serialize(golden: dict[str, Any]) -> str:
    """A golden document as its file's text: two-space indent, UTF-8, trailing newline."""
    return json.dumps(golden, indent=2, ensure_ascii=False) + "\n"


def _check_outcome(path: Path, outcome: dict[str, Any], where: str, *, hint: str) -> None:
    """The rules of a step list the schema cannot say: an error step ends it, and the finish."""
    steps = outcome["steps"]
    for index, step in enumerate(steps[:-1]):
        if "error" in step:
            raise GoldenError(path, f"{where}steps[{index + 1}] follows an error step", hint=hint)
    if steps and "error" in steps[-1]:
        if "finish" in outcome:
            raise GoldenError(
                path,
                "a golden file that ends in an error step has no finish"
                + (f" ({where.rstrip('.')})" if where else ""),
                hint=hint,
            )
    elif "finish" not in outcome:
        raise GoldenError(path, f"'{where}finish' is missing", hint=hint)


def _regenerate(case: Case) -> str:
    return f"golden files are generated: run 'conform golden update -k {case.case_id}'"


def read_golden(case: Case) -> dict[str, Any]:
    """The golden document of `case`; GoldenError when it is missing or malformed.

    A file above `golden_stream.STREAM_ABOVE` bytes is not parsed whole: its `steps` is then a
    lazy `GoldenSteps`, read from disk on each iteration (`harness.suite.golden.stream`).
    """
    return open_golden(case).document


def open_golden(case: Case) -> Golden:
    """The golden file of `case`, read but not yet parsed; GoldenError when it is missing or
    cannot be read (a malformed one is named when its document is first asked for)."""
    path = case.golden
    try:
        data = read_small(path, golden_stream.STREAM_ABOVE)  # None: too large to hold
    except FileNotFoundError:
        raise GoldenError(
            path,
            f"no golden file for '{case.case_id}'",
            hint=f"run 'conform golden update -k {case.case_id}'",
        ) from None
    except OSError as exc:  # a folder, no permission: one line, never a traceback
        raise GoldenError(path, f"cannot be read: {exc.strerror or exc}") from None
    return Golden(case, data)


class Golden:
    """A case's golden file as a run reads it: its bytes (None for one above `STREAM_ABOVE`,
    read step by step), and its document, parsed and checked when first asked for."""

    __slots__ = ("_class", "_document", "case", "data")

    def __init__(self, case: Case, data: bytes | None) -> None:
        self.case = case
        self.data = data
        self._document: dict[str, Any] | None = None
        self._class: InputClass | None = None

    @property
    def input_class(self) -> InputClass:
        """The class of the case's input (`harness.suite.classes`), read once: from the document
        when it is parsed already, else from the bytes, whose error kinds alone are read."""
        found = self._class
        if found is None:
            if self._document is not None or self.data is None:
                found = class_of(self.document)
            else:
                try:
                    found = class_of_bytes(self.data)
                except ValueError:
                    found = class_of(self.document)  # raises GoldenError, naming the problem
            self._class = found
        return found

    @property
    def document(self) -> dict[str, Any]:
        """The golden document; GoldenError when the file is malformed."""
        found = self._document
        if found is None:
            found = self._document = _parse(self.case, self.data)
        return found


def _parse(case: Case, data: bytes | None) -> dict[str, Any]:
    """The golden document of `case` from the file's bytes (None: stream it from disk)."""
    if data is None:
        try:
            return golden_stream.read_streamed(case.golden, schema=SCHEMA)
        except OSError as exc:  # gone since it was opened: one line, never a traceback
            raise GoldenError(case.golden, f"cannot be read: {exc.strerror or exc}") from None
    golden: dict[str, Any] | None = decode_typed(data)
    if golden is None:  # refused as it was decoded: say why in the schema's terms
        golden = _explain(case, data)
    _check_steps(case.golden, golden, hint=_regenerate(case))
    return golden


def _explain(case: Case, data: bytes) -> dict[str, Any]:
    """The document msgspec's typed decode refused, checked the slow way for the message.

    Anything it refuses that the schema allows after all (a number beyond a double, a lone
    surrogate escape: `json.loads` reads them) is returned, as the schema is the last word.
    """
    path = case.golden
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GoldenError(path, f"not valid UTF-8 (line {line})", hint=_regenerate(case)) from None
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
    golden_stream.check_header(path, golden, schema=SCHEMA, hint=_regenerate(case))
    check_golden(path, golden, hint=_regenerate(case))
    return golden  # type: ignore[no-any-return]


def _check_steps(path: Path, golden: dict[str, Any], *, hint: str) -> None:
    _check_outcome(path, golden, "", hint=hint)
    for index, alternative in enumerate(golden.get("alternatives", ())):
        _check_outcome(path, alternative, f"alternatives[{index}].", hint=hint)


def made_for(case: Case, thinking_capped: bool, golden: dict[str, Any]) -> dict[str, Any]:
    """`golden`, when it was made for `case`'s recording as it is; else GoldenError (a stale
    golden file, the suite's fault): its `thinking_capped` must be the recording's, or the
    target would be blamed for a `finish` called with the other value.

    Callers read the recording's `thinking_capped` first (the argument before `golden`), so that
    a recording that cannot be read is named as such, not as a missing golden file."""
    if golden["thinking_capped"] is not thinking_capped:
        raise GoldenError(
            case.golden,
            f"out of date with {case.recording}: the recording's thinking_capped is "
            f"{str(thinking_capped).lower()}, the golden file's "
            f"{str(golden['thinking_capped']).lower()}",
            hint=f"run 'conform golden update -k {case.case_id}' and review the diff",
        )
    return golden


@dataclass(frozen=True, slots=True)
class GoldenChange:
    """What `update` did, or `check` found, for one case."""

    case_id: str
    path: Path
    #: "created", "changed", "unchanged", "missing", "drifted", "orphaned", or "leftover" (a
    #: temporary file a killed run left behind)
    status: str


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
        if case.recording.stat().st_size <= golden_stream.STREAM_ABOVE:
            return False
    except OSError:
        return False  # the usual path names the problem
    # Several outcomes are built whole; implementation-defined cases are short in practice.
    return not any(pin in choices_of.OUTCOMES for pin in read_info(case.recording).pins)


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
        text = serialize(build_golden(case))  # first: an unreadable recording is named as such
        old = _current_text(case.golden)
        if old is None:
            problems.append(GoldenChange(case.case_id, case.golden, "missing"))
        elif old != text:
            problems.append(GoldenChange(case.case_id, case.golden, "drifted"))
    for path in suite.orphaned_golden(patterns):
        case_id = case_id_of(suite.golden_dir, path)
        problems.append(GoldenChange(case_id, path, "orphaned"))
    for path in stale_temp_files([suite.golden_dir, suite.recordings_dir]):
        problems.append(GoldenChange(_temp_owner(path), path, "leftover"))
    return problems


def _temp_owner(path: Path) -> str:
    """The file a leftover temporary file was to become (`.x.json.conform-….tmp`: `x.json`;
    the start of it, for a long name)."""
    return path.name[1:].rpartition(".conform-")[0]


def remove_leftovers(suite: Suite) -> list[Path]:
    """Remove the temporary files a killed run left in the suite; the paths removed."""
    removed = []
    for path in stale_temp_files([suite.golden_dir, suite.recordings_dir]):
        try:
            if not remove_stale_temp_file(path):
                continue  # a writer took it up, or it is gone
        except OSError as exc:
            raise GoldenError(
                path, f"a leftover temporary file cannot be removed: {exc.strerror or exc}"
            ) from None
        removed.append(path)
    return removed
