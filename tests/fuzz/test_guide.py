"""The guide of a fuzz run (harness/fuzz/guide.py): what it asks for, and what it counts.

Its promises are checked over the plans of a real search (each stream built as the search builds
it and noted): every breaker of the model is drawn within the first thousand streams, every
feature a valid stream can hold is held within them too, and the same seed gives the same plans.
"""

from __future__ import annotations

import sys

import pytest

from harness.check.modes import MODES
from harness.fuzz.guide import BREAKER_COUNT, Coverage, Guide, LineCoverage
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.expect import expected
from harness.fuzz.model.features import FEATURES
from harness.fuzz.model.streams import MADE_BY_BREAKERS, build


def _search(streams: int, *, seed: int = 1, broken: bool | None = None) -> Guide:
    guide = Guide(seed, modes=MODES, broken=broken)
    for number in range(streams):
        plan = guide.plan(number)
        breaker = BREAKERS[plan.breaker] if plan.breaker is not None else None
        guide.note(plan, build(Draw(plan.seed, plan.wanted), breaker).features)
    return guide


def test_every_breaker_is_drawn_within_the_first_thousand_streams() -> None:
    for seed in (1, 2):
        guide = _search(1000, seed=seed)
        assert [name for name, count in guide.breakers.items() if not count] == []
    assert len(BREAKERS) == BREAKER_COUNT


def test_every_feature_is_held_within_the_first_thousand_streams() -> None:
    guide = _search(1000)
    held = {name for name, count in guide.features.items() if count}
    assert sorted({f.name for f in FEATURES if f.drawn} - held) == []  # the corpus holds the rest
    assert held >= MADE_BY_BREAKERS  # through the breakers


def test_a_valid_only_search_draws_no_breaker() -> None:
    guide = _search(100, broken=False)
    assert not any(guide.breakers.values())
    assert not any(guide.features.get(name) for name in MADE_BY_BREAKERS)


def test_what_was_not_exercised_is_drawn_more(monkeypatch: pytest.MonkeyPatch) -> None:
    # The guide asks for features no stream held, then for pairs never seen together: the same
    # number of streams holds more of them than streams drawn blind.
    guided = _search(400)
    monkeypatch.setattr(Guide, "_wanted", lambda self, rng: frozenset())
    blind = _search(400)
    assert len(guided.pairs) > len(blind.pairs)
    held = [sum(1 for count in g.features.values() if count) for g in (guided, blind)]
    assert held[0] >= held[1]


def test_the_same_seed_gives_the_same_plans() -> None:
    first = [Guide(3, modes=MODES, broken=None).plan(n) for n in range(3)]
    again = [Guide(3, modes=MODES, broken=None).plan(n) for n in range(3)]
    assert first == again
    assert first != [Guide(4, modes=MODES, broken=None).plan(n) for n in range(3)]


def test_each_stream_runs_in_plain_and_one_other_mode_evenly() -> None:
    guide = _search(120)
    assert guide.modes["plain"] == 120
    others = [count for mode, count in guide.modes.items() if mode != "plain"]
    assert max(others) - min(others) <= 1


def test_the_coverage_of_several_searches_adds_up() -> None:
    one = Coverage(frozenset({"a"}), frozenset({"x"}), frozenset({("a", "b")}))
    two = Coverage(frozenset({"b"}), frozenset({"x", "y"}), frozenset())
    both = one | two
    assert both.features == {"a", "b"} and both.breakers == {"x", "y"} and len(both.pairs) == 1
    assert both.summary().startswith("features 2/")


def test_the_reference_lines_are_traced_and_the_tracer_put_back() -> None:
    lines = LineCoverage()
    payloads = build(Draw(1)).payload_records()
    before = sys.gettrace()
    found, new = lines.run(lambda: expected(payloads, False, "x.sse"))
    assert sys.gettrace() is before
    assert new > 10 and found["steps"] is not None
    _, again = lines.run(lambda: expected(payloads, False, "x.sse"))
    assert again == 0  # nothing new the second time
    assert 0 < len(lines.seen) <= lines.total
