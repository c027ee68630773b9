"""The pytest plugin says what `conform run` says, and its ids mean what they say.

- A failure's text has the seed and the `rerun:` line, as `conform run`'s (docs/ci.md promised it;
  neither was there).
- A test's node id given back to pytest runs that test (it was "file or directory not found"), and
  `--lf` reruns the tests that failed (it reran everything: pytest parses a stored id's `[mode]` as
  a parameter, which the plugin's ids lacked).
- Under pytest-xdist, a target that cannot start and a stale `--conform-xfail` line are the same
  usage error (exit 4) as without it (they were "no tests ran" and no word).
- `conform run --badge-label` sets the badge's label (it could not be set).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FOREIGN_PLUGINS_OFF, conform
from tests.hostile.support import CASE, ROOT

pytest_plugins = ["pytester"]

BROKEN = f"{ROOT / 'tests' / 'miniatures.py'}:DropsProgress"  # fails content_stop
ONE = ["--conform-target", BROKEN, "--conform-in-process", "-p", "no:randomly"]


def test_a_failure_has_the_seed_and_the_rerun_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ONE, "--conform-mode", "key-order", "-k", CASE)
    assert result.ret == 1
    text = result.stdout.str()
    assert f"FAIL {CASE} [key-order]" in text and "(--seed 20261129)" in text, text
    rerun = f"  rerun: conform run {BROKEN} -k {CASE} --mode key-order --in-process"
    assert rerun in result.stdout.lines, text


def test_a_node_id_given_back_runs_that_test_and_lf_reruns_the_failed(
    pytester: pytest.Pytester,
) -> None:
    node = f"conform/{CASE.replace('/', '::', 1)}[plain]"
    plain = [*ONE, "--conform-mode", "plain"]
    result = pytester.runpytest(*plain, node)
    assert result.ret == 1, result.stdout.str()
    assert result.parseoutcomes()["failed"] == 1
    assert "passed" not in result.parseoutcomes()
    shown = node.replace("[plain]", "[[]plain[]]")  # fnmatch reads [...] as a class
    result.stdout.fnmatch_lines([f"FAILED {shown}*"])
    again = pytester.runpytest(*plain, "--lf")  # the one failure above, kept by the cache
    assert again.parseoutcomes()["failed"] == 1, again.stdout.str()
    again.stdout.fnmatch_lines([f"FAILED {shown}*"])
    group = pytester.runpytest(*plain, "conform/llama-server", "-q")
    assert group.parseoutcomes()["failed"] > 1
    assert all("conform/llama-server::" in line for line in group.stdout.lines
               if line.startswith("FAILED"))  # fmt: skip


@pytest.mark.parametrize("mistake", ["target", "xfail"])
def test_under_xdist_a_usage_error_is_said_as_without_it(tmp_path: Path, mistake: str) -> None:
    stale = tmp_path / "stale.xfail"
    stale.write_text("no/such_case  # gone\n")
    options = (
        ["--conform-target", "no_such_module:Assembler"]
        if mistake == "target"
        else ["--conform-target", "reference:Assembler", "--conform-xfail", str(stale)]
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *FOREIGN_PLUGINS_OFF, "-p", "no:randomly", "-p",
         "no:cacheprovider", "-n", "2", *options, "--conform-mode", "plain", "-q"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    words = "cannot import module 'no_such_module'" if mistake == "target" else "matches no case"
    assert words in done.stdout + done.stderr


def test_the_badge_label_can_be_set(tmp_path: Path) -> None:
    badge = tmp_path / "badge.json"
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "-k", CASE, "--mode", "plain",
        "--badge", badge, "--badge-label", "my-assembler",
    )  # fmt: skip
    assert code == 0, output
    assert json.loads(badge.read_text())["label"] == "my-assembler"
