"""Levels of conformance (docs/spec.md, section 2): `--level completion` judges only what every
client has, whether each push failed (and how) and the finish, and reports say the level."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from tests.conftest import invoke

THIS = Path(__file__).resolve()
#: The targets' module (tests/miniatures.py): a worker imports it alone (not pytest, the command
#: line).
TARGETS = THIS.parents[1] / "miniatures.py"
SELECT = ("-k", "llama-server/*", "-k", "synthetic/r2_*", "-k", "synthetic/r8_*")


def run(tmp_path: Path, target: str, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "r.json"
    target = f"{TARGETS}:{target}"
    result = invoke("run", target, "--in-process", *SELECT, *args, "--json", str(out))
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(out.read_text(encoding="utf-8"))


def test_snapshot_events_pass_the_completion_level_and_fail_the_full_one(tmp_path: Path) -> None:
    code, full = run(tmp_path, "SnapshotEvents", "--mode", "plain")
    assert code == 1 and full["level"] == "full"
    paths = {m["path"] for r in full["results"] for m in r["mismatches"]}
    assert paths and all(re.match(r"steps\[\d+\]\.(events|state)", p) for p in paths), paths
    code, completion = run(tmp_path, "SnapshotEvents", "--level", "completion")
    assert code == 0 and completion["ok"] and completion["level"] == "completion"
    assert completion["rerun"] == ["--in-process", "--level", "completion"]


def test_the_completion_level_still_fails_a_wrong_completion(tmp_path: Path) -> None:
    code, report = run(tmp_path, "WrongCompletion", "--level", "completion", "--mode", "plain")
    assert code == 1
    failing = [r for r in report["results"] if r["status"] == "failed"]
    assert failing and all(r["mismatches"][0]["path"].startswith("finish.") for r in failing)


def test_the_matrix_shows_a_target_at_its_level_never_higher(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = invoke(
        "matrix", f"snap={TARGETS}:SnapshotEvents", *SELECT, "--mode", "plain",
        "--level", "completion", "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    schema = json.loads(
        (THIS.parents[2] / "harness/schemas/matrix.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(data, schema)
    column = data["targets"][0]
    assert column["level"] == "completion"
    assert column["verdict"] == "conforms at level completion"
    assert "conforms at level completion" in result.output
