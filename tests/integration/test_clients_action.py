"""The GitHub Action (`action.yml`) works: its `run:` steps, executed here as the runner would.

A composite action cannot run outside GitHub, but its shell steps can: each `run:` step is
executed in order with `bash --noprofile --norc -eo pipefail` (GitHub's `shell: bash`), its `env:`
block evaluated with the test's inputs (`${{ inputs.X }}`, `${{ github.action_path }}`,
`${{ steps.ID.outputs.K }}`; any other expression fails the test), and GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and GITHUB_ACTIONS set as on a runner. The `uses:` steps (setup-python,
upload-artifact) are skipped, and the install step runs with a stand-in `python3` that records
what it would install, so the test never reinstalls conform into its own environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
MINIATURES = ROOT / "tests" / "miniatures.py"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
FEW_CASES = "-k llama-server --mode plain"  # a short run: the real captures, one mode


def load() -> dict[str, Any]:
    document = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


class Runner:
    """Runs the action's shell steps in order, as GitHub's runner would."""

    def __init__(self, tmp_path: Path, inputs: dict[str, str]) -> None:
        action = load()
        defaults = action["inputs"].items()
        self.inputs = {name: str(spec.get("default", "")) for name, spec in defaults}
        unknown = set(inputs) - set(self.inputs)
        assert not unknown, f"not inputs of action.yml: {unknown}"
        self.inputs.update(inputs)
        self.steps = action["runs"]["steps"]
        self.tmp = tmp_path
        self.outputs: dict[str, dict[str, str]] = {}
        self.summary = tmp_path / "summary.md"
        self.installed = tmp_path / "pip-args.txt"
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "python3").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{self.installed}"\n')
        (shim / "python3").chmod(0o755)
        self.shim = shim

    def evaluate(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            expression = match.group(1)
            if m := re.fullmatch(r"inputs\.([\w-]+)", expression):
                return self.inputs[m.group(1)]
            if expression == "github.action_path":
                return str(ROOT)
            if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
                return self.outputs.get(m.group(1), {}).get(m.group(2), "")
            raise AssertionError(f"the test does not evaluate {expression!r}")

        return EXPRESSION.sub(one, text)

    def run(self) -> list[tuple[str, int]]:
        """Every shell step's (name, exit status), in order, until one fails."""
        done: list[tuple[str, int]] = []
        bin_dir = str(Path(sys.executable).parent)  # conform, from this environment
        for number, step in enumerate(self.steps):
            if "uses" in step:
                continue
            assert step.get("shell") == "bash", step["name"]
            output = self.tmp / f"output-{number}"
            output.touch()
            env = {
                **os.environ,
                "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
                "GITHUB_ACTIONS": "true",
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(self.summary),
                **{k: self.evaluate(str(v)) for k, v in (step.get("env") or {}).items()},
            }
            if step.get("id") == "install":
                env["PATH"] = os.pathsep.join([str(self.shim), env["PATH"]])
            cwd = self.tmp / self.evaluate(step.get("working-directory", "."))
            status = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=cwd,
                env=env,
                timeout=300,
                check=False,
            ).returncode
            lines = output.read_text(encoding="utf-8").splitlines()
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in lines)
            done.append((step["name"], status))
            if status != 0:
                break
        return done


def test_the_action_is_a_composite_with_documented_inputs() -> None:
    action = load()
    assert action["runs"]["using"] == "composite"
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name
    uses = [step["uses"] for step in action["runs"]["steps"] if "uses" in step]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    upload = next(s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", ""))
    assert "always()" in upload["if"], "the report is uploaded when the gate fails too"
    for step in action["runs"]["steps"]:
        # Inputs reach scripts through env, never pasted into the script (no injection).
        assert "${{" not in step.get("run", ""), step["name"]


def test_a_conforming_target_passes_and_reports(tmp_path: Path) -> None:
    runner = Runner(tmp_path, {"target": "reference:Assembler", "args": FEW_CASES})
    steps = runner.run()
    assert [status for _, status in steps] == [0, 0, 0], steps
    assert runner.installed.read_text().split("\n")[-2] == str(ROOT), "installs its own checkout"
    assert runner.outputs["run"]["status"] == "0"
    report = json.loads((tmp_path / "conform-report.json").read_text(encoding="utf-8"))
    assert report["results"], report.keys()
    assert runner.summary.read_text(encoding="utf-8").strip(), "conform wrote the job summary"


def test_a_failing_target_fails_the_gate_after_the_report(tmp_path: Path) -> None:
    target = f"{MINIATURES}:DropsProgress"
    runner = Runner(tmp_path, {"target": target, "args": FEW_CASES, "json-report": "out.json"})
    steps = runner.run()
    assert steps[-1] == ("Gate", 1), steps
    assert runner.outputs["run"] == {"status": "1", "report": "out.json"}
    assert (tmp_path / "out.json").is_file()
    assert "progress" in runner.summary.read_text(encoding="utf-8")


def test_a_baseline_lets_known_failures_pass(tmp_path: Path) -> None:
    target = f"{MINIATURES}:DropsProgress"
    baseline = tmp_path / "known.xfail"
    # The baseline, written in-process (the action's run, with it, is the point).
    invoke("run", target, *FEW_CASES.split(), "-q", "--in-process", "--write-xfail", baseline)
    assert baseline.read_text(encoding="utf-8").strip(), "the miniature fails some real capture"
    runner = Runner(tmp_path, {"target": target, "args": FEW_CASES, "xfail": str(baseline)})
    assert runner.run()[-1] == ("Gate", 0)


def test_an_exec_program_is_run(tmp_path: Path) -> None:
    program = f"node {ROOT / 'examples' / 'js' / 'assembler.mjs'}"
    if not any((Path(p) / "node").exists() for p in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("node is not on PATH")
    runner = Runner(tmp_path, {"exec": program, "args": FEW_CASES})
    assert runner.run()[-1] == ("Gate", 0)
    report = json.loads((tmp_path / "conform-report.json").read_text(encoding="utf-8"))
    assert report["results"]


@pytest.mark.parametrize(
    "inputs", [{}, {"target": "reference:Assembler", "exec": "node x.mjs"}], ids=["neither", "both"]
)
def test_target_or_exec_is_a_usage_error(tmp_path: Path, inputs: dict[str, str]) -> None:
    steps = Runner(tmp_path, inputs).run()
    assert steps[-1] == ("Run conform", 2), steps
