"""The whole-pass verdict of an in-process run (`harness.check.runner.rendered_pass`): a pass that
renders its golden file byte for byte passes without the file being parsed, and any other pass is
judged by `run_case` from the same calls, replayed; so every result is the one `run_case` gives."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal
from typing import Any, ClassVar

import msgspec
import pytest

import reference
import tests.miniatures as miniatures
from harness.check import parallel, runner
from harness.check.results import CRASHED, FAILED, PASSED, CaseResult
from harness.drive.inprocess import InProcessDriver
from harness.errors import GoldenError
from harness.suite.cases import Case, Suite
from harness.suite.golden import Golden, read_golden, serialize
from harness.suite.golden import store as golden_files
from harness.suite.recording import read_recording
from tests.check.test_runner import CrashesAtThirdPush, FailsAtSecondPush

PLAIN = "llama-server/content_stop"  # its finish's timings hold nulls (no draft fields)
CASES = (
    PLAIN,
    "llama-server/tool_calls_parallel",
    "llama-server/server_error",  # ends in an error step
    "llama-server/reasoning_then_answer",
)
MODES = ("plain", "unknown-fields", "hostile-keys")


def _run(
    cases: list[Case], factory: Any, monkeypatch: pytest.MonkeyPatch, *, whole: bool
) -> list[object]:
    """Every result of `cases` in `MODES`, with the whole-pass verdict or without it."""
    with monkeypatch.context() as patch:
        if not whole:
            patch.setattr(parallel, "rendered_pass", lambda *_, **__: None)
        driver = InProcessDriver(factory)
        try:
            results = list(parallel.run(cases, driver, modes=MODES, seed=5))
        except GoldenError as exc:
            return [f"GoldenError: {exc}"]
    return [replace(r, duration=0.0) for r in results]


def test_every_verdict_is_run_cases_for_deliberately_wrong_targets(
    suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each miniature, and targets that err early or crash, over cases in three modes: the same
    results, mismatches and crash reports with the whole-pass verdict as without it."""
    names = sorted({*miniatures.BATTERY, *miniatures.PITFALLS})
    factories = [getattr(miniatures, name) for name in names]
    factories += [FailsAtSecondPush, CrashesAtThirdPush, reference.Assembler]
    seen: set[object] = set()
    for factory in factories:
        wanted = list(CASES)
        pitfall = miniatures.PITFALLS.get(factory.__name__)
        if pitfall is not None:
            wanted.append(pitfall[0])
        cases = suite.cases(tuple(wanted))
        whole = _run(cases, factory, monkeypatch, whole=True)
        alone = _run(cases, factory, monkeypatch, whole=False)
        assert whole == alone, factory.__name__
        seen.update(r.status for r in whole if isinstance(r, CaseResult))
    assert {PASSED, FAILED, CRASHED} <= seen


def _decodes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    decoded: list[bytes] = []
    real = golden_files.decode_typed

    def counting(data: bytes, part: str | None = None) -> Any:
        decoded.append(data)
        return real(data, part)

    monkeypatch.setattr(golden_files, "decode_typed", counting)
    return decoded


def test_a_passing_case_is_judged_without_parsing_its_golden_file(
    suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded = _decodes(monkeypatch)
    cases = suite.cases(CASES)
    results = list(parallel.run(cases, InProcessDriver(reference.Assembler), modes=MODES, seed=5))
    assert [r.status for r in results] == [PASSED] * len(cases) * len(MODES)
    assert decoded == []
    modes = ["plain", "unknown-fields"]  # in hostile-keys its error may be an allowed one (I6)
    failing = list(parallel.run(cases[:1], InProcessDriver(FailsAtSecondPush), modes=modes, seed=5))
    assert [r.status for r in failing] == [FAILED] * len(modes)
    assert len(decoded) == 1  # parsed once, for every mode that needs it


class _Counted(FailsAtSecondPush):
    """Counts its assemblers and their pushes, over all of them."""

    made = 0
    pushed = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).made += 1

    def push(self, data: str) -> list[Any]:
        type(self).pushed += 1
        return super().push(data)


def test_a_failing_pass_is_judged_from_the_calls_it_made(suite: Suite) -> None:
    """The verdict is of one pass of the target: a pass that does not render its golden file is
    judged from its replayed calls, and the target is not run a second time."""
    (case,) = suite.cases((PLAIN,))
    (result,) = parallel.run([case], InProcessDriver(_Counted), modes=["plain"], seed=5)
    assert result.status == FAILED
    assert (_Counted.made, _Counted.pushed) == (1, 2)  # the second push erred: nothing after


class _NotANumber(reference.Assembler):
    """Reports NaN for the timings the server left out, which the golden file holds as null."""

    def finish(self, thinking_capped: bool) -> reference.Completion:
        completion = super().finish(thinking_capped)
        assert completion.timings is not None and completion.timings.draft_n is None
        timings = msgspec.structs.replace(completion.timings, draft_n=math.nan)
        return msgspec.structs.replace(completion, timings=timings)


def test_nan_where_the_golden_file_has_null_fails(suite: Suite) -> None:
    """msgspec writes NaN as `null`: the rendered file would match; the verdict must not."""
    (case,) = suite.cases((PLAIN,))
    (result,) = parallel.run([case], InProcessDriver(_NotANumber), modes=["plain"], seed=5)
    assert result.status == FAILED
    assert [m.path for m in result.mismatches] == ["finish.completion.timings.draft_n"]


class _NotANumberId(reference.Assembler):
    """Reads its id as NaN until one arrives, where the golden file's state holds null."""

    @property
    def id(self) -> Any:
        found = super().id
        return math.nan if found is None else found


def test_nan_where_a_golden_step_has_null_fails(suite: Suite) -> None:
    (case,) = suite.cases(("synthetic/r5_finish_without_id",))  # its steps' id is null
    (result,) = parallel.run([case], InProcessDriver(_NotANumberId), modes=["plain"], seed=5)
    assert result.status == FAILED
    assert {m.path.rpartition(".")[2] for m in result.mismatches} == {"id"}


class _ReusesItsList(reference.Assembler):
    """Returns the same list on every push, refilled: right, if unusual (each step's events must
    be read when it is made, not when the pass is compared)."""

    def __init__(self) -> None:
        super().__init__()
        self._events: list[Any] = []

    def push(self, data: str) -> list[Any]:
        self._events[:] = super().push(data)
        return self._events


def test_a_target_that_refills_one_list_passes(suite: Suite) -> None:
    cases = suite.cases(CASES)
    results = list(parallel.run(cases, InProcessDriver(_ReusesItsList), modes=["plain"], seed=5))
    assert [r.status for r in results] == [PASSED] * len(cases)


class _DecimalText(reference.Assembler):
    """Answers with the reference's own event type, its text a Decimal, which JSON has no type
    for (msgspec writes one as a string, `"1"`, and msgpack too)."""

    def push(self, data: str) -> list[Any]:
        return [
            reference.Content(Decimal(e.text)) if isinstance(e, reference.Content) else e  # type: ignore[arg-type]
            for e in super().push(data)
        ]


def test_a_value_json_has_no_type_for_is_not_read_as_the_text_it_is_written_as(
    suite: Suite,
) -> None:
    """In the reference's own event types as in any other: a value that is not a JSON scalar
    cannot be read, however it would be written."""
    (case,) = suite.cases(("synthetic/r1_two_choices_one_chunk",))  # answers "1", "2", "3"
    (result,) = parallel.run([case], InProcessDriver(_DecimalText), modes=["plain"], seed=5)
    assert result.status == CRASHED
    assert result.crash is not None and "is a Decimal, not a JSON scalar" in result.crash.message


def _golden_of(case: Case, document: dict[str, Any]) -> Golden:
    return Golden(case, serialize(document).encode())


def test_a_stale_golden_file_is_named_as_run_case_names_it(suite: Suite) -> None:
    (case,) = suite.cases((PLAIN,))
    info, payloads = read_recording(case.recording)
    assert payloads is not None
    golden = read_golden(case)
    stale = [
        {**golden, "steps": golden["steps"][:-1]},  # fewer steps than payloads
        {**golden, "steps": [*golden["steps"], golden["steps"][-1]]},  # more
        {**golden, "steps": [{**golden["steps"][0], "line": 99}, *golden["steps"][1:]]},
    ]
    for changed in stale:
        file = _golden_of(case, changed)
        for factory in (reference.Assembler, FailsAtSecondPush):
            found = []
            for whole in (True, False):
                pushes = runner.Pushes(payloads, None)
                try:
                    if whole:
                        result = runner.rendered_pass(
                            case,
                            file,
                            lambda f=file: f.document,
                            info,
                            InProcessDriver(factory),
                            mode="plain",
                            seed=5,
                            level="full",
                            pushes=pushes,
                        )
                    else:
                        result = runner.run_case(
                            case,
                            changed,
                            InProcessDriver(factory),
                            mode="plain",
                            seed=5,
                            payloads=payloads,
                            pushes=pushes,
                        )
                except GoldenError as exc:
                    found.append(str(exc))
                else:
                    assert result is not None
                    found.append(replace(result, duration=0.0))
            assert found[0] == found[1], (changed, factory)
            assert isinstance(found[0], str) or found[0].status == FAILED


def test_a_golden_file_in_another_layout_is_judged_the_usual_way(suite: Suite) -> None:
    """The same document written compactly: nothing renders it, and the case still passes."""
    (case,) = suite.cases((PLAIN,))
    info, payloads = read_recording(case.recording)
    assert payloads is not None
    document = read_golden(case)
    compact = Golden(case, msgspec.json.encode(document))
    driver = InProcessDriver(reference.Assembler)
    assert not compact.renders(info, [], None)
    result = runner.rendered_pass(
        case,
        compact,
        lambda: compact.document,
        info,
        driver,
        mode="plain",
        seed=5,
        level="full",
        pushes=runner.Pushes(payloads, None),
    )
    assert result is not None and result.status == PASSED


class _NeverErs(reference.Assembler):
    """Takes every payload, however broken (a protocol error swallowed), and counts its calls."""

    calls: ClassVar[list[str]] = []

    def push(self, data: str) -> list[Any]:
        type(self).calls.append("push")
        try:
            return super().push(data)
        except reference.InferError:
            return []

    def finish(self, thinking_capped: bool) -> reference.Completion:
        type(self).calls.append("finish")
        return super().finish(thinking_capped)


ERROR_ENDED = ("synthetic/r6_arguments_object", "synthetic/r6_choice_null")  # payloads after it


def test_a_pass_makes_the_calls_run_case_makes(
    suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that ends in an error step: the payloads up to it, and no finish, whatever the
    target does there (it is not given the payloads after it, nor a finish, to fail in)."""
    for case_id in ERROR_ENDED:
        (case,) = suite.cases((case_id,))
        steps = len(read_golden(case)["steps"])
        counts = []
        for whole in (True, False):
            _NeverErs.calls = []
            assert _run([case], _NeverErs, monkeypatch, whole=whole)
            counts.append(list(_NeverErs.calls))
        assert counts[0] == counts[1], case_id
        assert counts[0][:steps] == ["push"] * steps and "finish" not in counts[0][: steps + 1]


def test_a_golden_file_edited_against_its_schema_is_refused_as_a_worker_run_refuses_it(
    suite: Suite,
) -> None:
    """A target that matches a hand-edited file still meets the schema check (a finish reason
    no server sends), unless the pass is all the reference's own."""
    (case,) = suite.cases((PLAIN,))
    info, payloads = read_recording(case.recording)
    assert payloads is not None
    document = read_golden(case)
    document["finish"]["completion"]["finish_reason"] = "banana"
    file = _golden_of(case, document)

    class Banana(reference.Assembler):
        def finish(self, thinking_capped: bool) -> Any:
            done = super().finish(thinking_capped)
            return {**msgspec.to_builtins(done), "finish_reason": "banana"}

    with pytest.raises(GoldenError, match="does not follow the golden file schema"):
        runner.rendered_pass(
            case,
            file,
            lambda: file.document,
            info,
            InProcessDriver(Banana),
            mode="plain",
            seed=5,
            level="full",
            pushes=runner.Pushes(payloads, None),
        )


def test_the_replay_goes_on_with_the_same_assembler_past_the_record(suite: Suite) -> None:
    """When the judge asks for more than the pass made, the same assembler answers the rest."""
    (case,) = suite.cases((PLAIN,))
    _, payloads = read_recording(case.recording)
    assert payloads is not None
    datas, lines = [p.data for p in payloads], [p.line for p in payloads]
    alone = InProcessDriver(reference.Assembler)
    alone.start_case()
    whole: list[Any] = []
    alone.push_steps(datas, lines, whole)
    driver = InProcessDriver(reference.Assembler)
    driver.start_case()
    made: list[Any] = []
    driver.push_steps(datas[:2], lines[:2], made)
    replay = runner._Replay(driver, datas[:2], lines[:2], made, None, None, None)
    replay.start_case()
    out: list[Any] = []
    replay.push_steps(datas, lines, out)
    assert msgspec.msgpack.encode(out) == msgspec.msgpack.encode(whole)
    assert replay.finish(False) == alone.finish(False)


class _DecimalContent(reference.Assembler):
    """Finishes with the reference's own completion type, its content a Decimal."""

    def finish(self, thinking_capped: bool) -> reference.Completion:
        done = super().finish(thinking_capped)
        return msgspec.structs.replace(done, content=Decimal("123"))  # type: ignore[arg-type]


def test_a_completion_field_json_has_no_type_for_is_not_read_as_its_text(suite: Suite) -> None:
    """msgspec's conversion writes a Decimal as a string: in-process and through a worker, the
    completion is read field by field then, and refused as any value not a JSON scalar is."""
    (case,) = suite.cases((PLAIN,))
    (result,) = parallel.run([case], InProcessDriver(_DecimalContent), modes=["plain"], seed=5)
    assert result.status == CRASHED
    assert result.crash is not None and "content is a Decimal" in result.crash.message
