"""Issue 21 class 3, the gate can pass the wrong code: a target naming a module conform ships (or
one already imported) while a module or package of that name sits in the current folder is
refused with a hint (exit 2), never silently run as conform's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import invoke

OWN = "class Assembler:\n    def __init__(self):\n        raise RuntimeError('the user code ran')\n"


@pytest.mark.parametrize("layout", ["module", "package"])
@pytest.mark.parametrize("name", ["reference", "harness"])
@pytest.mark.parametrize("where", ["worker", "in-process"])
def test_a_module_of_the_current_folder_is_never_silently_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, layout: str, where: str
) -> None:
    if layout == "module":
        (tmp_path / f"{name}.py").write_text(OWN)
    else:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(OWN)
    monkeypatch.chdir(tmp_path)
    extra = ["--in-process"] if where == "in-process" else []
    args = ["run", f"{name}:Assembler", "-k", "llama-server/tool_call", "--mode", "plain", *extra]
    result = invoke(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: "), result.output
    assert f"'{name}' would not import ./{name}" in result.output
    assert "name the file instead" in result.output
    assert "passed" not in result.output


def test_the_file_path_runs_the_users_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "reference.py").write_text(OWN)
    monkeypatch.chdir(tmp_path)
    args = ["run", "./reference.py:Assembler", "-k", "llama-server/tool_call", "--mode", "plain"]
    result = invoke(*args)
    assert result.exit_code == 1, result.output
    assert "the user code ran" in result.output


@pytest.mark.parametrize("where", ["worker", "in-process"])
def test_a_copy_of_conforms_own_module_is_not_shadowed_but_an_edited_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # The README's first command, `pip install . && conform run reference:Assembler`, run in the
    # checkout conform was installed from: ./reference is the very code conform imports.
    import shutil

    import reference

    shutil.copytree(Path(reference.__file__).parent, tmp_path / "reference")
    monkeypatch.chdir(tmp_path)
    extra = ["--in-process"] if where == "in-process" else []
    args = ["run", "reference:Assembler", "-k", "llama-server/tool_call", "--mode", "plain", *extra]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.output
    with (tmp_path / "reference" / "__init__.py").open("a") as edited:  # no longer the same
        edited.write("\n# edited since it was installed\n")
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "'reference' would not import ./reference" in result.output
