"""What the packages export is what their `__all__` lists, and the reference's types behave."""

from __future__ import annotations

import types
from pathlib import Path

import msgspec
import pytest

import harness
import reference


def test_harness_exports_its_names_lazily_from_their_stage_modules() -> None:
    import importlib

    assert harness.__all__ == sorted(harness.__all__, key=lambda n: (not n.isupper(), n))
    assert set(harness.__all__) == set(harness._WHERE)
    for name in harness.__all__:
        home = importlib.import_module(harness._WHERE[name])
        assert getattr(harness, name) is getattr(home, name), name
    with pytest.raises(AttributeError):
        harness.no_such_name  # noqa: B018


def test_importing_harness_imports_none_of_its_stages() -> None:
    import subprocess
    import sys

    code = "import sys, harness; print(sorted(m for m in sys.modules if m.startswith('harness.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_line_does_not_import_the_recorders_http_client() -> None:
    # httpx is only for `conform record`: every other command would pay its import at start-up.
    import subprocess
    import sys

    code = (
        "import sys, click; from harness.cli import main; "
        "[main.get_command(click.Context(main), n) for n in ('run', 'list', 'golden', 'matrix')]; "
        "print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("package", [reference], ids=["reference"])
def test_all_is_complete_and_sorted(package: types.ModuleType) -> None:
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert set(package.__all__) == public
    assert package.__all__ == sorted(package.__all__, key=lambda n: (not n.isupper(), n))


def test_reference_types_are_frozen() -> None:
    content = reference.Content("a")
    with pytest.raises(AttributeError):
        content.text = "b"  # type: ignore[misc]
    assert isinstance(content, msgspec.Struct)


def test_push_raises_only_infer_error() -> None:
    for payload in ["", "[", "NaN", '{"choices": 1}', "{" * 5000, '"\\ud800"', "\ud800"]:
        with pytest.raises(reference.InferError) as info:
            reference.Assembler().push(payload)
        assert info.value.kind is reference.ErrorKind.PROTOCOL


def test_finish_reports_stream_closed_early_before_protocol() -> None:
    with pytest.raises(reference.InferError) as info:
        reference.Assembler().finish(False)
    assert info.value.kind is reference.ErrorKind.STREAM_CLOSED_EARLY


def test_the_api_example_gates_a_target_from_python(tmp_path: Path) -> None:
    """docs/api.md's example: a correct target exits 0 with a JSON report; a broken one exits 1
    and names its failing cases."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = root / "examples" / "api" / "gate.py"
    good = subprocess.run(
        [sys.executable, str(script), "reference:Assembler"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip().endswith("runs conform")
    report = json.loads((tmp_path / "conform-report.json").read_text(encoding="utf-8"))
    assert report["ok"] is True and report["modes"] == ["plain", "key-order"]
    broken = f"{root / 'tests' / 'miniatures.py'}:RepeatsToolCallId"
    bad = subprocess.run(
        [sys.executable, str(script), broken],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 1, bad.stderr
    assert "FAIL llama-server/" in bad.stdout
