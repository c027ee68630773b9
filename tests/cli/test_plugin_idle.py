"""The pytest plugin costs nothing when unused: a pytest run without a `--conform-*` option, in an
environment where conform is installed, imports no harness or reference module beyond the
plugin's entry point (`harness.plugin`, and the package `harness` it sits in).

The run is a real one, in a fresh process and a folder of its own: a conftest lists the modules
loaded when pytest ends. benchmarks/bench_plugin_start.py times the same start with and without
the plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FOREIGN_PLUGINS_OFF

LISTING = """
import json, os, sys

def pytest_unconfigure(config):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "reference"))
    with open(os.environ["CONFORM_MODULES_OUT"], "w") as out:
        json.dump(loaded, out)
"""


def loaded_modules(folder: Path, *options: str) -> list[str]:
    """The harness and reference modules a pytest run in `folder` has imported when it ends."""
    (folder / "conftest.py").write_text(LISTING, encoding="utf-8")
    (folder / "test_plain.py").write_text("def test_plain():\n    assert True\n", encoding="utf-8")
    out = folder / "modules.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *FOREIGN_PLUGINS_OFF,
            *options,
        ],
        cwd=folder,
        env={**_environment(), "CONFORM_MODULES_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found: list[str] = json.loads(out.read_text(encoding="utf-8"))
    return found


def _environment() -> dict[str, str]:
    import os

    # PYTEST_ADDOPTS or PYTEST_PLUGINS of the outer run must not leak into the inner one.
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def test_a_plain_pytest_run_imports_only_the_plugins_entry_point(tmp_path: Path) -> None:
    assert loaded_modules(tmp_path) == ["harness", "harness.plugin"]


def test_the_listing_sees_the_harness_once_an_option_is_used(tmp_path: Path) -> None:
    # The same listing, with the plugin at work: the check above can fail.
    found = loaded_modules(
        tmp_path,
        "--conform-target",
        "reference:Assembler",
        "--conform-in-process",
        "--conform-mode",
        "plain",
        "-k",
        "r1_ or test_plain",
    )
    assert {"harness.check.runner", "harness.suite.cases", "reference"} <= set(found)


def test_the_plugin_is_registered_through_the_entry_point() -> None:
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="pytest11") if e.name == "conform"]
    assert found == ["harness.plugin"]
