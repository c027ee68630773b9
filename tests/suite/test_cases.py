"""The suite's walk (`harness.suite.cases._walk`) finds what `rglob` and `case_id_of` find, in the
same order and with the same path text, on the shipped suite and on a tree with every odd name,
link and file kind, named by an absolute or a relative path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.suite.cases import _walk
from harness.suite.recording import RECORDING_SUFFIXES, case_id_of

ROOT = Path(__file__).resolve().parents[2]


def _by_rglob(folder: Path, *, recordings: bool) -> list[tuple[str, str]]:
    if recordings:
        paths = [
            p for p in sorted(folder.rglob("*")) if p.suffix in RECORDING_SUFFIXES and p.is_file()
        ]
    else:
        paths = sorted(folder.rglob("*.json"))
    return [(case_id_of(folder, p), str(p)) for p in paths]


def _odd_tree(top: Path) -> Path:
    (top / "a" / "b").mkdir(parents=True)
    for name in (
        "a/b/x.http", "a/x.sse", "a/x.http", "a/g.json", ".http", ".hid.sse", "Z.sse", "z.SSE",
        "e.", "y.json", ".json", "a.b.json", "x.json.txt",
    ):  # fmt: skip
        (top / name).write_text("", "utf-8")
    (top / "d.http").mkdir()  # a folder with a recording's suffix, a recording inside it
    (top / "d.http" / "in.sse").write_text("", "utf-8")
    (top / "x.json").mkdir()
    (top / "x.json" / "q.json").write_text("", "utf-8")
    (top / "link").symlink_to(top / "a")  # listed, never entered
    (top / "lf.http").symlink_to(top / "a" / "x.sse")
    (top / "gl.json").symlink_to(top / "a")
    (top / "broken.sse").symlink_to(top / "nowhere")
    os.mkfifo(top / "fifo.sse")  # not a regular file: no recording
    return top


@pytest.mark.parametrize("recordings", [True, False], ids=["recordings", "golden"])
def test_the_walk_finds_what_rglob_finds_in_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recordings: bool
) -> None:
    suffixes = RECORDING_SUFFIXES if recordings else (".json",)
    shipped = ROOT / ("recordings" if recordings else "golden")
    monkeypatch.chdir(tmp_path)
    _odd_tree(tmp_path / "odd")
    for folder in (shipped, tmp_path / "odd", Path("odd"), Path("odd/a"), tmp_path / "missing"):
        walked = _walk(folder, suffixes, files_only=recordings)
        assert walked == _by_rglob(folder, recordings=recordings), folder
    assert len(_walk(shipped, suffixes, files_only=recordings)) > 300
