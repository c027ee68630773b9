"""What the packages export is what their `__all__` lists, and the reference's types behave."""

from __future__ import annotations

import types

import msgspec
import pytest

import harness
import reference


@pytest.mark.parametrize("package", [harness, reference], ids=["harness", "reference"])
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
