"""Class 9, suite consistency: `record NAME` beside `NAME.sse` refuses (else every command would
fail on "two recordings make case"); a golden file whose `thinking_capped` disagrees with its
recording is a stale golden file, not the target's failure; a non-UTF-8 recording is named as
such, not as a missing golden file; a newline, U+2028, U+202E or a BOM in a case name is printed
escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.safetext import printable
from tests.conftest import conform
from tests.hostile.support import CASE, small_suite

SSE = 'data: {"id":"a","choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n'


def test_record_beside_a_hand_written_recording_refuses(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (suite / "recordings" / "mine.sse").write_text(SSE)
    (tmp_path / "req.json").write_text('{"messages": []}')
    code, output = conform(
        "record", "http://127.0.0.1:9", "--request", tmp_path / "req.json", "--suite", suite,
        "mine", "--force",
    )  # fmt: skip
    assert code == 2, output
    assert "mine.sse" in output and "Error:" in output
    assert not (suite / "recordings" / "mine.http").exists()
    assert conform("list", "--suite", suite)[0] == 0  # the suite still opens


def test_a_golden_file_capped_unlike_its_recording_is_stale(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    golden = suite / "golden" / f"{CASE}.json"
    data = json.loads(golden.read_text())
    data["thinking_capped"] = not data["thinking_capped"]  # a golden file left from an old run
    data["finish"]["completion"]["thinking_capped"] = data["thinking_capped"]
    golden.write_text(json.dumps(data, indent=2) + "\n")
    run = ["run", "reference:Assembler", "--suite", suite, "--mode", "plain"]
    for how in ("--in-process", "-j1"):
        code, output = conform(*run, how)
        assert code == 2, output
        assert "out of date" in output and "thinking_capped" in output
        assert "FAIL" not in output
    assert conform("golden", "check", "--suite", suite)[0] == 1


def test_a_recording_that_is_not_utf8_is_named_as_such(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (suite / "recordings" / "latin1.sse").write_bytes(SSE.replace("x", "\xe9").encode("latin-1"))
    for command in (
        ["run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain"],
        ["golden", "check", "--suite", suite],
        ["golden", "update", "--suite", suite],
    ):
        code, output = conform(*command)
        assert code == 2, output
        assert "latin1.sse" in output and "not valid UTF-8" in output, output
        assert "no golden file" not in output


@pytest.mark.parametrize(
    "name", ["new\nline", "sep\u2028arator", "\u202eevil", "\ufeffbom", "c1\x85next"]
)
def test_a_case_name_is_printed_escaped(tmp_path: Path, name: str) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (suite / "recordings" / f"{name}.sse").write_text(SSE)
    assert conform("golden", "update", "--suite", suite)[0] == 0
    escaped = printable(name)
    assert escaped != name and escaped.isascii()
    for command in (
        ["list", "--suite", suite],
        ["run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain", "-v"],
    ):
        code, output = conform(*command)
        assert code == 0, output
        assert name not in output, command
        assert escaped in output, command
    (suite / "golden" / f"{name}.json").unlink()
    code, output = conform("golden", "check", "--suite", suite)
    assert code == 1 and name not in output and f"missing: {suite}/golden/{escaped}" in output
