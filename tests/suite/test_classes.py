"""Classes of input (docs/spec.md section 10): computed from the golden files, never declared,
and the decisions about the class of a run in each mode."""

from __future__ import annotations

from pathlib import Path

import pytest

import reference
from harness.errors import RecordingError
from harness.suite.cases import Suite
from harness.suite.classes import InputClass, class_of, class_of_bytes
from harness.suite.golden import open_golden
from harness.suite.recording import HAND_WRITTEN, REAL, iter_payloads, read_info

ROOT = Path(__file__).resolve().parents[2]


def test_a_class_is_what_the_allowed_outcomes_say() -> None:
    ok = {"steps": [{"line": 1, "events": [], "state": {}}], "finish": {"completion": {}}}
    refused = {"steps": [{"line": 1, "error": {"kind": "protocol"}}]}
    late = {"steps": [], "finish": {"error": {"kind": "protocol"}}}
    server = {"steps": [{"line": 1, "error": {"kind": "server", "message": ""}}]}
    cut = {"steps": [], "finish": {"error": {"kind": "stream_closed_early"}}}
    assert class_of(ok) is InputClass.VALID
    assert class_of(server) is class_of(cut) is InputClass.VALID  # not refusals
    assert class_of(refused) is class_of(late) is InputClass.INVALID
    assert class_of({**ok, "alternatives": [refused]}) is InputClass.IMPLEMENTATION_DEFINED
    assert class_of({**refused, "alternatives": [late]}) is InputClass.INVALID


def test_every_shipped_case_has_one_class_read_alike_from_bytes_and_document() -> None:
    suite = Suite.open(None)
    found = {}
    for case in suite.cases():
        golden = open_golden(case)
        assert golden.data is not None
        found[case.case_id] = class_of_bytes(golden.data)
        assert found[case.case_id] is class_of(golden.document), case.case_id
    # Each class is held by the shipped suite; the real captures are valid input.
    assert set(found.values()) == set(InputClass)
    for case in suite.cases():
        if read_info(case.recording).real:
            assert found[case.case_id] is InputClass.VALID, case.case_id


def test_a_prefix_of_a_valid_stream_is_valid_input() -> None:
    # The decision for `truncated`: a run keeps its case's class, since a prefix of a valid
    # stream is a stream cut before its finish. It holds because no cut of a valid case before its
    # finish reason makes the reference refuse it (R5's protocol errors need a finish reason).
    # A cut after it may: the finish reason can come before a tool call's id (pieces after it are
    # still read, R7; synthetic/tool_pairs/finish_after_first_piece_with_empty_id_name_first), and
    # that prefix is a finished stream with a nameless call, which R5 refuses.
    suite = Suite.open(None)
    for case in suite.cases():
        golden = open_golden(case)
        if golden.input_class is not InputClass.VALID:
            continue
        payloads = [p.data for p in iter_payloads(case.recording)]
        finished = next((n + 1 for n, p in enumerate(payloads) if '"finish_reason":"' in
                         p.replace(" ", "")), len(payloads))  # fmt: skip
        for cut in range(1, min(len(payloads), finished)):
            assembler = reference.Assembler()
            try:
                for data in payloads[:cut]:
                    assembler.push(data)
                assembler.finish(False)
            except reference.InferError as exc:
                assert exc.kind is not reference.ErrorKind.PROTOCOL, (case.case_id, cut, exc)


def test_a_recording_says_where_it_comes_from(tmp_path: Path) -> None:
    sse = tmp_path / "a.sse"
    sse.write_text('data: {"choices": []}\n\n')
    assert read_info(sse).source == HAND_WRITTEN and not read_info(sse).real
    sse.write_text(": source: documented vLLM 0.6.3 (docs.vllm.ai streaming)\ndata: {}\n\n")
    info = read_info(sse)
    assert (info.source, info.origin) == ("documented", "vLLM 0.6.3 (docs.vllm.ai streaming)")
    real = ROOT / "recordings" / "llama-server" / "tool_call.http"
    assert read_info(real).source == REAL and read_info(real).origin == "llama-server build 11434"
    for bad, why in (
        ("source: made up", "'source:' names 'made'"),
        ("source: real", "must name the server and its version"),
        ("source:", "names nothing"),
    ):
        sse.write_text(f": {bad}\ndata: {{}}\n\n")
        with pytest.raises(RecordingError, match=why):
            read_info(sse)
