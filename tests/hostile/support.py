"""What the class-by-class hostile tests share: a small suite of their own to break (`conform`
itself is `tests.conftest.conform`)."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = "llama-server/content_stop"


def small_suite(folder: Path, *cases: str) -> Path:
    """A suite in `folder` with the shipped recordings and golden files of `cases` (a few
    shipped cases by default)."""
    for case in cases or (CASE, "llama-server/tool_call", "llama-server/server_error"):
        for kind, suffixes in (("recordings", (".http", ".sse")), ("golden", (".json",))):
            for suffix in suffixes:
                source = ROOT / kind / f"{case}{suffix}"
                if source.exists():
                    (folder / kind / case).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(source, folder / kind / f"{case}{suffix}")
    return folder
