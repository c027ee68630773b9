"""The fast reference (`reference.fast`) against the plain one (`reference.assembler`), which
generates the golden files: the same results on every input, or the fast one is wrong.

- Every shipped recording, under every combination of the outcomes of the points it pins (the
  reference's own first, as `reference.choices.combinations` lists them), with the payloads of
  every mode (`harness.check.modes`: plain, and rewritten as each other mode rewrites them).
- Generated streams: the stream model's (`harness.fuzz.model.streams`, broken ones too, as a
  fuzz search draws them) and the
  property tests' chunks, mutated chunks, JSON values and arbitrary text
  (tests/assembler/test_properties.py), under the reference's own choices and drawn ones.

Both are pushed the same payloads side by side, and after every push compared on the events
(encoded, so that `1` and `1.0` differ), the four state readers (and the fast one's `state()`),
the error (its kind, and the message of a `server` error), and the completion `finish` gives
there (the `truncated` mode's expectation at every cut, and the finish of every other mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.check.modes import DEFAULT_SEED, MODES, mutate
from harness.fuzz.guide import Guide
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.streams import build
from harness.suite.cases import Case, Suite
from reference import choices as choices_of
from reference.assembler import Assembler as Plain
from reference.choices import Choices
from reference.fast import Assembler as Fast
from reference.types import ErrorKind, InferError
from tests.assembler.test_properties import chunks, dump, json_values, valid_streams
from tests.folds import each, parts

CASES = sorted(Suite.open(None).cases(), key=lambda case: case.case_id)
_encode = msgspec.json.Encoder().encode


def trace(assembler: Any, payloads: Sequence[str], capped: bool) -> list[Any]:
    """Everything an assembler shows of a stream: after each push its events and state, or its
    error (and the stream ends there), then what `finish` gives at that point."""
    seen: list[Any] = []
    for data in payloads:
        try:
            events = assembler.push(data)
        except InferError as exc:
            seen.append(error_of(exc))
            return seen
        state = [assembler.id, assembler.reasoning_tokens, assembler.in_reasoning]
        state.append(assembler.is_finished)
        if isinstance(assembler, Fast):
            assert list(assembler.state()) == state
        seen.append((_encode(events), _encode(state)))
        try:
            seen.append(_encode(assembler.finish(capped)))
        except InferError as exc:
            seen.append(error_of(exc))
    return seen


def error_of(exc: InferError) -> tuple[str, str | None]:
    """An error as the golden files hold it: its kind, and a server error's message."""
    return (exc.kind.value, exc.message if exc.kind is ErrorKind.SERVER else None)


def differs(payloads: Sequence[str], choices: Choices, capped: bool = False) -> str | None:
    """None when both assemblers show the same of `payloads`; else where they part."""
    plain = trace(Plain(choices), payloads, capped)
    fast = trace(Fast(choices), payloads, capped)
    if plain == fast:
        return None
    at = next((i for i, (a, b) in enumerate(zip(plain, fast, strict=False)) if a != b), None)
    return f"they part at {at}: plain {plain[at : at + 1]}, fast {fast[at : at + 1]}"


def _combinations(pins: Sequence[str]) -> list[Choices]:
    points = [pin for pin in pins if pin in choices_of.OUTCOMES]
    return [choices_of.REFERENCE.replace(c) for c in choices_of.combinations(points)]


def same_in_every_choice_and_mode(case: Case) -> None:
    info, recorded = case.info, list(case.payloads())
    modes_of_streams: dict[tuple[str, ...], list[str]] = {}  # modes that push the same, once
    for mode in MODES:
        payloads = tuple(
            mutate(mode, payload.data, seed=DEFAULT_SEED, case_id=case.case_id, step=step)
            for step, payload in enumerate(recorded)
        )
        modes_of_streams.setdefault(payloads, []).append(mode)
    parted = []
    for choices in _combinations(info.pins):
        for payloads, modes in modes_of_streams.items():
            where = differs(payloads, choices, info.thinking_capped)
            if where is not None:
                parted.append(f"mode {' = '.join(modes)}, choices {choices}: {where}")
    assert not parted, "; ".join(parted)


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py
@pytest.mark.parametrize("cases", parts([(case.case_id, case) for case in CASES]))
def test_every_recording_every_choice_every_mode(cases: list[tuple[str, Case]]) -> None:
    each(cases, same_in_every_choice_and_mode)


# --- generated payloads ---------------------------------------------------------------------------

EVERY_CHOICE = [
    choices_of.REFERENCE.replace(c) for c in choices_of.combinations(choices_of.OUTCOMES)
]
BUDGET = settings(
    max_examples=100,
    deadline=None,
    database=None,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck),
)
#: The reference's own choices, drawn most often: only those take the fast path.
some_choices = st.just(choices_of.REFERENCE) | st.sampled_from(EVERY_CHOICE)


def texts_of_values(value: Any) -> str:
    return value if isinstance(value, str) else dump(value, ascii_only=False)


@BUDGET
@given(st.lists(chunks | json_values | st.text(max_size=30), max_size=5), some_choices)
def test_generated_chunks_and_text(values: list[Any], choices: Choices) -> None:
    assert differs([texts_of_values(value) for value in values], choices) is None


@settings(BUDGET, max_examples=50)
@given(valid_streams(), some_choices)
def test_generated_valid_streams(payloads: list[str], choices: Choices) -> None:
    assert differs(payloads, choices) is None


def test_the_stream_models_streams_broken_or_not() -> None:
    # The first streams of a `conform fuzz` search (its guide asks for every feature and every
    # breaker early), each under the reference's own choices or, every other one, drawn ones.
    guide = Guide(DEFAULT_SEED, modes=MODES, broken=None)
    for number in range(400):
        plan = guide.plan(number)
        stream = build(Draw(plan.seed, plan.wanted), BREAKERS.get(plan.breaker or ""))
        guide.note(plan, stream.features)
        choices = EVERY_CHOICE[number % len(EVERY_CHOICE)] if number % 2 else choices_of.REFERENCE
        found = differs(stream.payloads, choices, stream.thinking_capped)
        assert found is None, (number, found, stream.payloads)
