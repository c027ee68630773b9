"""Golden files: their one serialization."""

from __future__ import annotations

from harness.suite.golden import build_golden, serialize


def test_serialization_follows_the_contract(suite) -> None:
    case = next(c for c in suite.cases() if c.case_id == "llama-server/tool_call")
    document = build_golden(case)
    text = serialize(document)
    assert list(document) == ["schema", "recording", "thinking_capped", "pins", "steps", "finish"]
    assert text.startswith('{\n  "schema": 2,\n  "recording": "llama-server/tool_call.http",\n')
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert list(document["steps"][1]) == ["line", "events", "state"]
    assert case.golden.read_text(encoding="utf-8") == text


# -- rules of a golden file the schema cannot say, and when the long-recording path is taken ------


def _broken_golden(suite_copy, change):  # type: ignore[no-untyped-def]
    import json

    (case,) = suite_copy.cases(("synthetic/r8_error_wins_over_choices",))
    golden = json.loads(case.golden.read_text(encoding="utf-8"))
    change(golden)
    case.golden.write_text(json.dumps(golden), encoding="utf-8")
    return case


def test_a_step_after_an_error_step_is_refused(suite_copy) -> None:
    import pytest

    from harness.errors import GoldenError
    from harness.suite.golden import read_golden

    case = _broken_golden(suite_copy, lambda g: g["steps"].append(g["steps"][0]))
    with pytest.raises(GoldenError, match=r"steps\[\d+\] follows an error step"):
        read_golden(case)


def test_a_finish_after_an_error_step_is_refused(suite_copy) -> None:
    import json

    import pytest

    from harness.errors import GoldenError
    from harness.suite.golden import read_golden

    (other,) = suite_copy.cases(("llama-server/content_stop",))
    finish = json.loads(other.golden.read_text(encoding="utf-8"))["finish"]
    case = _broken_golden(suite_copy, lambda g: g.update(finish=finish))
    with pytest.raises(GoldenError, match="ends in an error step has no finish"):
        read_golden(case)


def test_only_long_recordings_take_the_streaming_path(suite_copy, monkeypatch) -> None:
    from harness.suite import golden
    from harness.suite.golden import stream as golden_stream

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the other path")

    short = suite_copy.cases(("llama-server/content_stop",))
    monkeypatch.setattr(golden_stream, "update_streamed", refuse)
    monkeypatch.setattr(golden_stream, "check_streamed", refuse)
    assert [c.status for c in golden.update(short)] == ["unchanged"]
    assert golden.check(suite_copy, short, ("llama-server/content_stop",)) == []
    monkeypatch.undo()
    # Long (above STREAM_ABOVE): streamed, never built whole, unless it pins an I-point.
    monkeypatch.setattr(golden_stream, "STREAM_ABOVE", 0)
    monkeypatch.setattr(golden, "build_golden", refuse)
    assert [c.status for c in golden.update(short)] == ["unchanged"]
    monkeypatch.undo()
    monkeypatch.setattr(golden_stream, "STREAM_ABOVE", 0)
    monkeypatch.setattr(golden_stream, "update_streamed", refuse)
    pinned = suite_copy.cases(("synthetic/r6_nesting_129",))  # outcomes are built whole
    assert [c.status for c in golden.update(pinned)] == ["unchanged"]
