"""Golden files: their one serialization and atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import golden
from harness.golden import build_golden, serialize, write_atomically


def test_serialization_follows_the_contract(suite) -> None:
    case = next(c for c in suite.cases() if c.case_id == "llama-server/tool_call")
    document = build_golden(case)
    text = serialize(document)
    assert list(document) == ["schema", "recording", "thinking_capped", "steps", "finish"]
    assert text.startswith('{\n  "schema": 1,\n  "recording": "llama-server/tool_call.http",\n')
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert list(document["steps"][1]) == ["line", "events", "state"]
    assert case.golden.read_text(encoding="utf-8") == text


def test_non_ascii_text_is_written_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    write_atomically(path, serialize({"text": "é中😀"}))
    assert "é中😀".encode() in path.read_bytes()


def test_a_written_file_has_the_usual_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "a" / "g.json", "{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "g.json").stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "g.json"
    path.write_text("old\n")

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(golden.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]
