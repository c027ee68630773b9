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
