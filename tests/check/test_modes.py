"""The input modes: they change no result of a conforming target; each catches its own fragility.

Each fragile assembler below is the reference with one realistic shortcut that the shipped
recordings, pushed as recorded, never expose; the matching mode must catch it at the field it
breaks. The text rewrites are checked directly too: same JSON value, same number lexemes, and
payloads that must not be rewritten left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

import reference
import tests.miniatures as miniatures
from harness.check import members
from harness.check import modes as inject
from harness.check.modes import (
    ESCAPES,
    KEY_ORDER,
    MODES,
    PLAIN,
    TRUNCATED,
    UNKNOWN_FIELDS,
    WHITESPACE,
    mutate,
    truncation_points,
)
from harness.check.options import RunOptions
from harness.check.parallel import run
from harness.check.results import PASSED, CaseResult
from harness.check.runner import run_case
from harness.check.truncation import prefix_finishes
from harness.drive.inprocess import InProcessDriver, finish_step, push_step
from harness.suite.cases import Case, Suite
from harness.suite.golden import read_golden
from harness.suite.near_names import NEAR_NAMES
from harness.suite.recording import iter_payloads
from reference.choices import OUTCOMES, REFERENCE
from tests.conftest import invoke
from tests.miniatures import (
    MINIATURES,
    SHORTCUT,
    ContentKeyFastPath,
    IndexIsFirstMember,
    ToolCallMeansFinished,
    named,
)
from tests.miniatures import _Base as _Wrapper  # the reference, with one thing to change

REWRITING = (KEY_ORDER, WHITESPACE, ESCAPES)
SEED = inject.DEFAULT_SEED
#: The shortcuts' module (tests/miniatures.py), as a target path that works from any working
#: directory. A worker imports it alone: this file would bring pytest and the command line into
#: each worker (0.3 s of CPU).
TARGETS = Path(__file__).resolve().parents[1] / "miniatures.py"


#: The cases the shortcuts run on: the real captures, where each fails in its mode (the whole
#: suite in every mode is the reference's test below).
SAMPLE = ("llama-server",)


def _run(suite: Suite, factory: Any, modes: Sequence[str], *, seed: int = SEED) -> list[CaseResult]:
    """`factory` run in-process on the SAMPLE cases of `suite` in `modes`."""
    driver = InProcessDriver(factory)
    return list(run(suite.cases(SAMPLE), driver, modes=modes, options=RunOptions(seed=seed)))


def _failures(results: list[CaseResult]) -> list[CaseResult]:
    return [r for r in results if r.status != PASSED]


# The shortcuts --------------------------------------------------------------------------------


#: Each mode that rewrites or cuts, the shortcut it catches (tests/miniatures.py's SHORTCUT
#: miniatures) and the field where it must catch it.
FRAGILE = {
    MINIATURES[name].mode: (getattr(miniatures, name), MINIATURES[name].pattern)
    for name in named(SHORTCUT)
}


# Results --------------------------------------------------------------------------------------


def test_every_mode_is_listed_by_run_help() -> None:
    result = invoke("run", "--help")
    assert result.exit_code == 0
    for mode in MODES:
        assert mode in result.output


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py
def test_the_reference_passes_every_case_in_every_mode(suite: Suite) -> None:
    # Gated on its own outcome at every point (--strict): on a case that pins a point, it gives
    # the outcome of its own choice there, in every mode (the test below takes the others).
    cases = suite.cases()
    driver = InProcessDriver(reference.Assembler)
    options = RunOptions(seed=SEED, strict=True)
    results = list(run(cases, driver, modes=MODES, options=options))
    assert len(results) == len(cases) * len(MODES)
    assert [(r.case_id, r.mode, r.status) for r in _failures(results)] == []


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py
def test_the_reference_under_each_choice_gives_that_choices_outcome_in_every_mode(
    suite: Suite,
) -> None:
    # Only the cases that pin a point (their recordings' pins: lines): the others give the same
    # under every outcome (test_pins). Only the outcomes the reference does not take: its own is
    # the strict run above.
    failed = []
    for case in suite.cases():
        points = [p for p in case.pins if p in OUTCOMES]
        if not points:
            continue
        golden = read_golden(case)
        assert set(points) == set(golden["pins"]) & set(OUTCOMES), case.case_id
        for point in points:
            for value in OUTCOMES[point]:
                if value == getattr(REFERENCE, point):
                    continue
                chosen = REFERENCE.replace({point: value})
                driver = InProcessDriver(lambda chosen=chosen: reference.Assembler(chosen))
                for mode in MODES:
                    result = run_case(
                        case,
                        golden,
                        driver,
                        mode=mode,
                        options=RunOptions(seed=SEED, chosen_points=((point, value),)),
                    )
                    if result.status != PASSED:
                        failed.append((case.case_id, point, value, mode, result.status))
    assert failed == []


@pytest.mark.parametrize("mode", sorted(FRAGILE))
def test_a_fragile_assembler_passes_plain(suite: Suite, mode: str) -> None:
    factory, _ = FRAGILE[mode]
    assert _failures(_run(suite, factory, [PLAIN])) == []


@pytest.mark.parametrize("mode", sorted(FRAGILE))
def test_its_mode_catches_it_at_the_field_it_breaks(suite: Suite, mode: str) -> None:
    factory, field = FRAGILE[mode]
    failed = _failures(_run(suite, factory, [mode]))
    assert failed, f"{mode} let {factory.__name__} pass"
    paths = [m.path for r in failed for m in r.mismatches]
    assert any(f".{field}" in path or path.endswith(field) for path in paths), paths
    if mode != TRUNCATED:
        # the exact payload pushed is in the report (a mismatch at finish has none)
        shown = [m.payload for r in failed for m in r.mismatches if m.step is not None]
        assert shown and all(p is not None for p in shown)


def test_a_key_order_failure_shows_a_rewritten_payload(suite: Suite) -> None:
    failed = _failures(_run(suite, IndexIsFirstMember, [KEY_ORDER]))
    mismatch = failed[0].mismatches[0]
    assert mismatch.payload is not None
    assert mismatch.payload == mutate(
        KEY_ORDER,
        _payload_at(failed[0], mismatch.step),
        seed=SEED,
        case_id=failed[0].case_id,
        step=mismatch.step,
    )


def _payload_at(result: CaseResult, step: int | None) -> str:
    assert step is not None
    path = Suite.open(Path(__file__).resolve().parents[2]).recordings_dir / result.recording
    return list(iter_payloads(path))[step].data


def test_the_cli_report_names_the_seed_and_the_exact_payload(suite: Suite) -> None:
    target = f"{TARGETS}:FinishReasonByRegex"
    out = invoke("run", target, "--mode", WHITESPACE, "--seed", "7", "-k", *SAMPLE)
    assert out.exit_code == 1, out.output
    assert f"[{WHITESPACE}]  recordings/" in out.output and "(--seed 7)" in out.output
    pushed = [line for line in out.output.splitlines() if "payload pushed at line" in line]
    assert pushed
    literal = pushed[0].split(": ", 1)[1].split(" … (")[0]  # a long one ends with its size
    assert isinstance(json.loads(literal), str)  # a JSON string literal: \r and \n are visible
    assert "\n" in json.loads(literal)


def test_the_truncated_report_names_the_cut(suite: Suite) -> None:
    failed = _failures(_run(suite, ToolCallMeansFinished, [TRUNCATED]))
    cut = failed[0].cut
    assert failed[0].mismatches[0].path.startswith(f"prefix[{cut}].finish")
    out = invoke("run", f"{TARGETS}:ToolCallMeansFinished", "--mode", TRUNCATED, "-k", *SAMPLE)
    assert f"(--seed {SEED}, cut after payload {cut})" in out.output


def test_results_are_deterministic_from_the_seed(suite: Suite) -> None:
    def outcome(seed: int) -> list[Any]:
        results = _run(suite, ContentKeyFastPath, [ESCAPES], seed=seed)
        return [(r.case_id, [(m.path, m.payload) for m in r.mismatches]) for r in results]

    assert outcome(1) == outcome(1)
    assert outcome(1) != outcome(2)


# The rewrites ---------------------------------------------------------------------------------

CHUNK = (
    '{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"h\\u00e9 \\"q\\" 😀\\n",'
    '"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}],'
    '"id":"chatcmpl-1","timings":{"predicted_n":1.0,"prompt_ms":1E2,"draft_n":-0,'
    '"x":12345678901234567890123,"y":1e400,"z":0.1000000000000000055511151231257827},'
    '"usage":{},"e":[],"w":[ 1 , { } ]}'
)


def _numbers(text: str) -> list[str]:
    """The number lexemes of a JSON text, in order of size (strings blanked out first)."""
    outside = re.sub(r'"[^"\\]*(?:\\.[^"\\]*)*"', '""', text)
    return sorted(re.findall(r"-?[0-9][0-9.eE+-]*", outside))


def _value_with_pairs(text: str) -> Any:
    """The JSON value with objects as sorted pair lists (duplicates kept, order ignored)."""
    return json.loads(text, object_pairs_hook=lambda pairs: sorted(pairs, key=repr))


@pytest.mark.parametrize("mode", REWRITING)
@pytest.mark.parametrize("step", range(20))
def test_a_rewrite_keeps_the_value_and_every_number_lexeme(mode: str, step: int) -> None:
    out = mutate(mode, CHUNK, seed=SEED, case_id="c", step=step)
    assert out != CHUNK
    assert _value_with_pairs(out) == _value_with_pairs(CHUNK)
    assert _numbers(out) == _numbers(CHUNK)


def test_key_order_shuffles_every_level_and_keeps_duplicates_in_order() -> None:
    data = '{"a":1,"b":{"x":1,"y":2,"z":3},"a":2,"\\u0061":3,"c":[{"p":1,"q":2}]}'
    outs = {mutate(KEY_ORDER, data, seed=s, case_id="c", step=0) for s in range(40)}
    assert len(outs) > 10
    for out in outs:
        pairs = json.loads(out, object_pairs_hook=list)
        assert [v for k, v in pairs if k == "a"] == [1, 2, 3]
        assert json.loads(out) == json.loads(data)
    assert any(out.index('"y"') < out.index('"x"') for out in outs)
    assert any(out.index('"q"') < out.index('"p"') for out in outs)


def test_whitespace_uses_all_four_and_only_between_tokens() -> None:
    outs = [mutate(WHITESPACE, CHUNK, seed=SEED, case_id="c", step=s) for s in range(10)]
    for out in outs:
        assert "\n" in out
        assert json.loads(out) == json.loads(CHUNK)
    added = {ch for out in outs for ch in out if ch in " \t\n\r"}
    assert added == {" ", "\t", "\n", "\r"}


def test_escapes_reach_keys_and_use_surrogate_pairs_beyond_the_bmp() -> None:
    outs = [mutate(ESCAPES, '{"k":"😀"}', seed=SEED, case_id="c", step=s) for s in range(10)]
    for out in outs:
        assert re.fullmatch(r'\{"\\u006[bB]":"\\u[dD]83[dD]\\u[dD][eE]00"\}', out), out
        assert json.loads(out) == {"k": "😀"}


UNCHANGED = [
    "",
    "NaN",
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":1}x',
    '{"a":1,}',
    '{"a":"\\ud800"}',
    '{"a":"\\udc00\\ud800"}',
    '{"a":"\\ud800\\u0041"}',
    '{"a":"raw\tcontrol"}',
    '{"a":01}',
    '{"a":1.}',
    '{"a":-}',
    "\ufeff{}",
    "[" * 129 + "]" * 129,
    '{"a":' + "[" * 200 + "]" * 200 + "}",
    '{"a":' + "[" * 100_000 + "]" * 100_000 + "}",
]


@pytest.mark.parametrize("mode", (*REWRITING, UNKNOWN_FIELDS))
@pytest.mark.parametrize("data", UNCHANGED, ids=lambda d: repr(d[:20]))
def test_payloads_that_cannot_be_rewritten_safely_are_pushed_unchanged(
    mode: str, data: str
) -> None:
    assert mutate(mode, data, seed=SEED, case_id="c", step=0) == data


def test_nesting_up_to_the_limit_is_still_rewritten() -> None:
    data = "[" * 127 + '{"a":1,"b":2}' + "]" * 127
    out = mutate(WHITESPACE, data, seed=SEED, case_id="c", step=0)
    assert out != data and json.loads(out) == json.loads(data)


def test_unknown_fields_leaves_a_number_alone_whose_exact_value_would_move() -> None:
    # Re-serialized, 9007199254740993.0 would come back 9007199254740992.0 (I2 `exact` tells them).
    data = '{"prompt_progress":{"total":9007199254740993.0},"choices":[]}'
    assert mutate(UNKNOWN_FIELDS, data, seed=SEED, case_id="c", step=0) == data
    kept = '{"timings":{"predicted_n":9007199254740992.0,"prompt_ms":3.1688235294117644}}'
    assert mutate(UNKNOWN_FIELDS, kept, seed=SEED, case_id="c", step=0) != kept


def test_unknown_fields_leaves_duplicate_keys_alone() -> None:
    data = '{"id":5,"id":"x","choices":[]}'
    assert mutate(UNKNOWN_FIELDS, data, seed=SEED, case_id="c", step=0) == data


@pytest.mark.parametrize("mode", (*REWRITING, UNKNOWN_FIELDS))
def test_a_rewrite_is_a_function_of_seed_case_and_step(mode: str) -> None:
    chunk = CHUNK.replace('"y":1e400,', "")  # unknown-fields cannot re-serialize 1e400

    def at(seed: int, case_id: str, step: int) -> str:
        return mutate(mode, chunk, seed=seed, case_id=case_id, step=step)

    assert at(1, "c", 0) == at(1, "c", 0)
    assert len({at(1, "c", 0), at(2, "c", 0), at(1, "d", 0), at(1, "c", 1)}) == 4


# The truncated mode ---------------------------------------------------------------------------


def _fresh_finish(case: Case, cut: int, capped: bool) -> dict[str, Any]:
    assembler = reference.Assembler()
    for payload in list(iter_payloads(case.recording))[:cut]:
        push_step(assembler, payload.data, payload.line)
    return finish_step(assembler, capped)


def test_truncated_expects_what_a_fresh_reference_returns_on_each_prefix(suite: Suite) -> None:
    checked = 0
    for case in suite.cases():
        golden = json.loads(case.golden.read_text(encoding="utf-8"))
        points = truncation_points(len(golden["steps"]), seed=SEED, case_id=case.case_id)
        capped = golden["thinking_capped"]
        for cut, expected in prefix_finishes(case, points, capped):
            assert expected == _fresh_finish(case, cut, capped), (case.case_id, cut)
            checked += 1
    assert checked > 300


class CallLog(_Wrapper):
    calls: ClassVar[list[str]] = []

    def __init__(self) -> None:
        super().__init__()
        CallLog.calls.append("new")

    def push(self, data: str) -> list[Any]:
        CallLog.calls.append("push")
        return self.inner.push(data)

    def finish(self, thinking_capped: bool) -> Any:
        CallLog.calls.append("finish")
        return self.inner.finish(thinking_capped)


def test_truncated_cuts_a_small_case_after_each_payload(suite: Suite) -> None:
    case = next(c for c in suite.cases() if c.case_id == "synthetic/r1_progress_with_text")
    CallLog.calls = []
    [result] = run(
        [case], InProcessDriver(CallLog), modes=[TRUNCATED], options=RunOptions(seed=SEED)
    )
    assert result.status == PASSED
    # Four payloads: cut after 1, 2 and 3 (after 4 is the plain run).
    assert CallLog.calls == [
        *("new", "push", "finish"),
        *("new", "push", "push", "finish"),
        *("new", "push", "push", "push", "finish"),
    ]
    expected = [_fresh_finish(case, cut, False) for cut in (1, 2, 3)]
    assert [e["error"]["kind"] for e in expected] == ["stream_closed_early"] * 3


def test_truncated_finishes_after_the_finish_reason_before_the_last_chunk(suite: Suite) -> None:
    case = next(c for c in suite.cases() if c.case_id == "synthetic/r7_usage_chunk_after_finish")
    steps = len(list(iter_payloads(case.recording)))
    finishes = dict(prefix_finishes(case, range(1, steps), False))
    assert "completion" in finishes[steps - 1]  # the finish reason had arrived: a completion


def test_long_recordings_are_cut_a_bounded_number_of_times() -> None:
    assert truncation_points(5, seed=1, case_id="c") == [1, 2, 3, 4]
    assert truncation_points(1, seed=1, case_id="c") == [0]  # the empty stream
    assert truncation_points(0, seed=1, case_id="c") == [0]
    assert len(truncation_points(129, seed=1, case_id="c")) == 128
    for steps in (130, 10_000, 1_000_000):
        points = truncation_points(steps, seed=1, case_id="c")
        assert points == truncation_points(steps, seed=1, case_id="c")
        assert points[:4] == [1, 2, 3, 4] and points[-1] == steps - 1
        assert len(points) == 8 and sum(points) < 4 * steps
    draws = {tuple(truncation_points(10_000, seed=s, case_id="c")) for s in range(5)}
    assert len(draws) == 5


def test_drawn_cuts_are_new_and_every_middle_cut_can_be_drawn() -> None:
    # 130 steps: the drawn cuts come from 5..128, never a head cut again (always 8 cuts), and
    # over enough seeds each of them is drawn, 5 and 128 included.
    drawn: set[int] = set()
    for seed in range(400):
        points = truncation_points(130, seed=seed, case_id="c")
        assert len(points) == 8 and points == sorted(set(points)), points
        drawn |= set(points[4:-1])
    assert drawn == set(range(5, 129))


def test_the_mode_names_are_the_documented_ones() -> None:
    # Users type these names (--mode, --xfail lines, reports): they are part of the interface.
    assert MODES == (
        "plain", "unknown-fields", "hostile-keys", "key-order", "whitespace", "escapes",
        "truncated",
    )  # fmt: skip


def test_unknown_values_cover_every_json_type_and_edge() -> None:
    values = members._VALUES
    kinds = {type(v).__name__ for v in values}
    assert kinds == {"NoneType", "bool", "int", "float", "str", "list", "dict"}
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    assert any(v < 0 for v in numbers) and any(v >= 2**64 for v in numbers)
    assert any(isinstance(v, float) and not v.is_integer() for v in numbers)
    assert any(isinstance(v, float) and str(v) == "-0.0" for v in numbers)
    # Decoys: members named like fields the contract reads, inside unknown values (never read).
    decoys = [v for v in values if isinstance(v, dict) and "index" in v]
    assert decoys and any("tool_calls" in v for v in decoys)
    assert any(isinstance(v, list) and any(isinstance(i, dict) for i in v) for v in values)


def test_every_invented_name_reaches_every_level_the_contract_reads() -> None:
    chunk = json.dumps({
        "id": "c", "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
            {"index": 0, "id": "t", "function": {"name": "f", "arguments": "{}"}}]}}],
    })  # fmt: skip
    seen: dict[str, set[str]] = {"top": set(), "choice": set(), "function": set()}
    for seed in range(60):
        data = json.loads(inject.mutator(inject.UNKNOWN_FIELDS, seed=seed, case_id="c")(0, chunk))
        choice = data["choices"][0]
        seen["top"] |= set(data) - {"id", "choices"}
        seen["choice"] |= set(choice) - {"index", "finish_reason", "delta"}
        seen["function"] |= set(choice["delta"]["tool_calls"][0]["function"]) - {
            "name",
            "arguments",
        }
    for level, names in seen.items():
        near = {n.name for n in NEAR_NAMES[level]}
        assert names - near == set(inject.UNKNOWN_NAMES), level
        assert names & near, level
