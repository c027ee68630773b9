"""Shared fixtures: the project's own suite and a scratch copy of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.suite import Suite

ROOT = Path(__file__).resolve().parent.parent

collect_ignore_glob = ["fuzz/*"]


@pytest.fixture(scope="session")
def suite() -> Suite:
    """The suite shipped in this repository."""
    return Suite.open(ROOT)


@pytest.fixture
def suite_copy(tmp_path: Path) -> Suite:
    """A private copy of the shipped suite that a test may break."""
    for name in ("recordings", "golden"):
        shutil.copytree(ROOT / name, tmp_path / name)
    return Suite.open(tmp_path)
