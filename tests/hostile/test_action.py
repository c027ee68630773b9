"""The GitHub Action passes every argument it is given: `args` written as a YAML block of several
lines keeps them all (its first line alone was once passed, the rest dropped without a word).

The action's "Run conform" step is run as the runner runs it (`bash -e`), with a `conform` on
PATH that writes down the arguments it got: no run of the suite is needed to see them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from tests.hostile.support import ROOT


def _run_step(tmp_path: Path, inputs: dict[str, str]) -> list[str]:
    """The arguments the action's run step gives `conform`, with these inputs."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    (step,) = [s for s in steps if s.get("id") == "run"]
    got = tmp_path / "args.txt"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "conform").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{got}"\n')
    (shim / "conform").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "CONFORM_TARGET": inputs.get("target", ""),
        "CONFORM_EXEC": inputs.get("exec", ""),
        "CONFORM_XFAIL": "",
        "CONFORM_LEVEL": "",
        "CONFORM_ARGS": inputs.get("args", ""),
        "CONFORM_REPORT": "conform-report.json",
        "CONFORM_BADGE": "",
        "CONFORM_BADGE_LABEL": "",
    }
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env=env, cwd=tmp_path, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return got.read_text().splitlines()


def test_args_of_several_lines_are_all_passed(tmp_path: Path) -> None:
    args = "-j 2\n--timeout 30\n  --mode plain --mode key-order\n\n-k 'a*'\n"
    got = _run_step(tmp_path, {"target": "mypkg:Assembler", "args": args})
    assert got == [
        "run", "mypkg:Assembler", "--json", "conform-report.json", "-j", "2", "--timeout", "30",
        "--mode", "plain", "--mode", "key-order", "-k", "'a*'",  # split, never evaluated
    ]  # fmt: skip


def test_args_on_one_line_are_split_at_white_space(tmp_path: Path) -> None:
    got = _run_step(tmp_path, {"exec": "./prog --serve", "args": "-j 2\t--seed 7"})
    assert got == ["run", "--exec", "./prog --serve", "--json", "conform-report.json",
                   "-j", "2", "--seed", "7"]  # fmt: skip
