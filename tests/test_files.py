"""The one atomic writer: text, pieces and bytes; the usual mode; nothing left on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import files
from harness.files import write_atomically
from harness.suite.golden import serialize


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

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(files.WriteError, match="disk full"):
        write_atomically(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


def test_text_in_pieces_and_bytes_are_written_as_given(tmp_path: Path) -> None:
    write_atomically(tmp_path / "pieces", iter(["a\n", "b", "\n"]))
    write_atomically(tmp_path / "bytes", b"\r\n\xff")
    assert (tmp_path / "pieces").read_bytes() == b"a\nb\n"
    assert (tmp_path / "bytes").read_bytes() == b"\r\n\xff"


def test_without_replace_an_existing_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "x"
    write_atomically(path, b"one", replace=False)
    with pytest.raises(FileExistsError):
        write_atomically(path, b"two", replace=False)
    assert path.read_bytes() == b"one"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]


def test_an_unwritable_report_is_a_setup_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(files.ConformError, match="cannot write"):
        files.write_report(tmp_path / "file" / "below" / "r.json", "{}")
