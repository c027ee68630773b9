"""The corpus folders written by the generators of tests/tools/ hold exactly what they write, and
each generated case is small and pins what its leading comments say."""

from __future__ import annotations

import importlib
import json
from types import ModuleType

import pytest

from harness.suite.cases import Suite
from harness.suite.confusion import COERCIONS, KINDS, READ_FIELDS, SAMPLE, confused
from harness.suite.recording import iter_payloads
from tests.tools.corpus_cases import ROOT, write_all

GENERATORS = (
    "tests.tools.grow_confusion",
    "tests.tools.grow_edges",
    "tests.tools.grow_tool_pairs",
)


def _generator(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", GENERATORS)
def test_each_generated_folder_is_what_its_generator_writes(name: str) -> None:
    module = _generator(name)
    differ = write_all(module.FOLDER, module.cases(), check=True)
    assert differ == [], f"stale: {' '.join(differ)} (python {module.GENERATOR})"


@pytest.mark.parametrize("name", GENERATORS)
def test_each_generated_case_is_small(name: str) -> None:
    module = _generator(name)
    for case in module.cases():
        assert 2 <= len(case.payloads) <= 8, case.case_id
        assert all(len(p) < 16_384 for p in case.payloads), case.case_id


def test_every_read_field_has_every_value_that_is_wrong_there() -> None:
    kinds = {f.kind for f in READ_FIELDS}
    assert kinds == set(KINDS)
    for read in READ_FIELDS:
        values = [text for _, text in confused(read)]
        assert len(values) == len(set(values)), read.path
        assert "false" in values, read.path
        if read.sampled:  # one of each wrong JSON type
            assert [c.name for c, _ in confused(read)] == list(SAMPLE), read.path
        else:
            assert "true" in values, read.path
        if read.kind in ("integer", "number"):
            assert not {"0", "1", "-0", "1.0"} & set(values), read.path  # valid, or I1
        if read.kind == "string":
            assert not {'""', '" "', '"0"'} & set(values), read.path
    used = {c.name for read in READ_FIELDS for c, _ in confused(read)}
    assert used == {c.name for c in COERCIONS}, "a coercion applies to no field"


def test_the_type_confusion_cases_refuse_the_confused_payload() -> None:
    # Each case is valid up to the payload holding the confused value (the one before the
    # finish), and its golden file refuses that one: whatever a coercing client makes of it, its
    # result differs there.
    module = _generator("tests.tools.grow_confusion")
    suite = {c.case_id: c for c in Suite(ROOT).cases()}
    for generated in module.cases():
        case = suite[generated.case_id]
        golden = json.loads(case.golden.read_text(encoding="utf-8"))
        confused_line = list(iter_payloads(case.recording))[-2].line
        assert golden["steps"][-1] == {"line": confused_line, "error": {"kind": "protocol"}}, (
            case.case_id
        )
        assert "alternatives" not in golden, case.case_id
