"""The short cuts of the worker's protocol (issue 22): each one gives what the general way gives.

A planned case is queued in one go (`ProcessDriver._send_case`), `new` and `finish` are written
by hand, the usual push reply is checked in one pass (`replies.plain_push`), stderr is drained by
a poll of its pipe, and the worker imports neither the harness's side nor `importlib.metadata`
when it need not.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.pipes import Worker, new_family
from harness.drive.process import ProcessDriver, _numbered
from harness.drive.replies import plain_push, plain_push_line, resolve_texts, unknown_field
from harness.drive.spec import python_target_driver
from harness.drive.wire import decode_line, encode_line
from harness.errors import TargetCrash
from harness.worker import program as adapter

ROOT = Path(__file__).resolve().parents[2]


def _chunk(delta: dict[str, Any], *, ascii: bool = True, **more: Any) -> str:
    chunk = {"id": "c1", "choices": [{"index": 0, "delta": delta, **more}]}
    return json.dumps(chunk, ensure_ascii=ascii)


#: Every way a payload goes: framed (ASCII, and not: "é" is two bytes), one of 16 Ki characters
#: and more (framed the general way), one past 64 KiB of UTF-8 (the shared file where there is
#: one), and a lone surrogate (a JSON string; a protocol error, so the case ends there).
PAYLOADS = [
    _chunk({"content": "a"}),
    _chunk({"content": "é" * 40}, ascii=False),
    _chunk({"content": "b" * 16_400}),
    _chunk({"reasoning_content": "ü" * 40_000}, ascii=False),
    _chunk({"content": "c"}, finish_reason="stop"),
    '{"id": "c1", "choices": [{"index": 0, "delta": {"content": "\ud800"}}]}',
]


def _queued(driver: ProcessDriver) -> list[bytes]:
    """Spy on the bytes `driver` queues for its program, one entry a `queue` call."""
    found: list[bytes] = []
    worker = driver._worker
    assert worker is not None
    real = worker.queue

    def queue(*parts: bytes, now: bool = True) -> int:
        found.append(b"".join(parts))
        return real(*parts, now=now)

    worker.queue = queue  # type: ignore[method-assign]
    return found


def _framed(seq: int, data: str) -> bytes:
    raw = data.encode()
    return b'{"seq":%d,"op":"push","bytes":%d}\n' % (seq, len(raw)) + raw + b"\n"


def test_a_planned_case_is_queued_as_each_request_would_be() -> None:
    in_process = InProcessDriver(load_target("reference:Assembler"))
    in_process.start_case()
    expected = [in_process.push(data, n) for n, data in enumerate(PAYLOADS)]
    assert "error" in expected[-1] and "error" not in expected[-2]
    with python_target_driver("reference:Assembler") as driver:
        driver.start()
        queued = _queued(driver)
        driver.start_case()
        driver.plan(PAYLOADS, finish=None)
        sent = list(driver._ahead)
        seq = sent[0].seq
        assert [s.seq for s in sent] == list(range(seq, seq + len(PAYLOADS)))
        # Each request's mark is where the stream ends once it is written: the last one's is
        # everything queued, and each is the one before it plus its own bytes.
        assert sent[-1].mark == driver._worker.queued  # type: ignore[union-attr]
        sizes = [later.mark - earlier.mark for earlier, later in itertools.pairwise(sent)]
        new, framed, long, shared, last, surrogate = queued
        assert new == b'{"seq":%d,"op":"new"}\n' % (seq - 1)
        assert framed == _framed(seq, PAYLOADS[0]) + _framed(seq + 1, PAYLOADS[1])
        assert long == _framed(seq + 2, PAYLOADS[2])  # 16,400 characters: framed, its own way
        where = "at" if driver._shared is not None else "bytes"
        assert json.loads(shared.partition(b"\n")[0])[where] is not None
        assert last == _framed(seq + 4, PAYLOADS[4])
        assert json.loads(surrogate) == {"seq": seq + 5, "op": "push", "data": PAYLOADS[5]}
        assert sizes == [len(framed) - len(_framed(seq, PAYLOADS[0]))] + [
            len(part) for part in (long, shared, last, surrogate)
        ]
        steps = [driver.push(data, n) for n, data in enumerate(PAYLOADS)]
        assert steps == expected


@pytest.mark.parametrize(
    "request_",
    [
        {"seq": 7, "op": "new"},
        {"seq": 8, "op": "finish", "thinking_capped": True},
        {"seq": 9, "op": "finish", "thinking_capped": False},
    ],
)
def test_new_and_finish_are_written_as_encode_line_writes_them(request_: dict[str, Any]) -> None:
    with python_target_driver("reference:Assembler") as driver:
        driver.start()
        queued = _queued(driver)
        worker = driver._worker
        assert worker is not None
        worker.seq = request_["seq"] - 1
        fields = {key: value for key, value in request_.items() if key not in ("seq", "op")}
        driver._send(request_["op"], fields, now=False)
        assert queued == [encode_line(request_, ascii_only=True)]
        driver._discard()  # its replies would not be the ones asked for


PLAIN = {
    "seq": 3,
    "events": [
        {"type": "content", "text": "Hi"},
        {"type": "reasoning", "text": "hm"},
        {"type": "tool_call_delta", "index": 0, "id": None, "name": "f", "arguments": "{"},
        {"type": "progress", "total": 1, "cache": 0, "processed": 1, "time_ms": 2},
    ],
    "state": {"id": "c1", "reasoning_tokens": 0, "in_reasoning": False, "is_finished": False},
}


def _changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    reply = json.loads(json.dumps(PLAIN))
    target = reply
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return reply


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("zzz",), 1),  # an unknown field at the top
        (("state", "zzz"), 1),  # in the state
        (("events", 0, "zzz"), 1),  # in an event
        (("events", 2, "text"), "x"),  # a field of another kind of event
        (("events", 0, "text"), {"$text": [[3, 0, 2]]}),  # a text reference
        (("events", 2, "arguments"), {"$text": ["{"]}),
        (("events", 0, "type"), "mystery"),
        (("events", 1), "not an event"),
        (("events",), {"not": "a list"}),
        (("state",), ["not", "a", "state"]),
        (("state",), KeyError),
        (("events",), KeyError),
    ],
)
def test_plain_push_leaves_every_other_reply_to_the_general_checks(
    path: tuple[Any, ...], value: Any
) -> None:
    reply = _changed(path, value)
    assert not plain_push(reply)


#: Lines of replies to push around the usual one: each value of another type or form, fields
#: missing, unknown, repeated or in another order, keys escaped, references and `$number`s.
_ODD_VALUES = [
    1, 1.0, 0, -1, 2**63, 2**64, True, False, None, "", "x", "\ud800", [], {}, {"$text": ["a"]},
    {"$number": "NaN"}, [1], 1e300,
]  # fmt: skip


def _odd_lines() -> list[bytes]:
    plain = json.dumps(PLAIN)
    lines = [plain, json.dumps({**PLAIN, "events": []}), plain.replace("3", "30", 1)]
    for path in [("seq",), ("state", "id"), ("state", "reasoning_tokens"),
                 ("state", "in_reasoning"), ("events", 0, "text"), ("events", 0, "type"),
                 ("events", 1, "text"),
                 ("events", 2, "index"), ("events", 2, "id"), ("events", 2, "name"),
                 ("events", 2, "arguments"), ("events", 3, "total"), ("events", 3, "time_ms"),
                 ("events", 0), ("events",), ("state",), ("zzz",), ("events", 0, "zzz"),
                 ("state", "zzz")]:  # fmt: skip
        for value in _ODD_VALUES:
            lines.append(json.dumps(_changed(path, value)))
        if path[-1] != "zzz":
            lines.append(json.dumps(_changed(path, KeyError)))
    lines += [
        plain.replace('"seq": 3,', '"seq": 3, "seq": 4,'),  # a repeated key: the last one wins
        plain.replace('"text": "Hi"', '"text": "Hi", "text": "Ho"'),
        plain.replace('"type": "content", "text": "Hi"', '"text": "Hi", "type": "content"'),
        plain.replace('"text": "Hi"', '"\\u0074ext": "Hi"'),  # an escaped key is the same key
        plain.replace('"Hi"', '"H\\u00efi"'),
        '{"state": ' + json.dumps(PLAIN["state"]) + ', "events": [], "seq": 3}',
        plain.replace('"reasoning_tokens": 0', '"reasoning_tokens": 0.0'),
        plain.replace('"reasoning_tokens": 0', '"reasoning_tokens": 1e2'),
        plain.replace('"reasoning_tokens": 0', '"reasoning_tokens": -0'),
        plain.replace('"reasoning_tokens": 0', '"reasoning_tokens": NaN'),
        plain[:-1], plain + " x", "[]", "null", "", " ", plain + "\n",
    ]  # fmt: skip
    return [line.encode() for line in lines]


def _general(line: bytes) -> tuple[Any, ...] | None:
    """What `ProcessDriver._ready` took as the usual reply before `plain_push_line` (decoded,
    then checked), as (seq, events, state); None for any other line."""
    try:
        reply = decode_line(line)
    except (ValueError, RecursionError):
        return None
    plain = type(reply) is dict and type(reply.get("seq")) is int and plain_push(reply)
    if not plain or _numbered(line):
        return None
    return reply["seq"], reply["events"], reply["state"]


@pytest.mark.parametrize("line", _odd_lines(), ids=lambda line: line.decode()[:80])
def test_the_usual_push_reply_read_in_one_pass_is_what_the_general_way_reads(line: bytes) -> None:
    fast = plain_push_line(line)
    if fast is None:  # the general way judges it, as before
        return
    general = _general(line)
    assert general is not None, "taken as usual, but the general way finds something in it"
    # The same values, of the same types (`True == 1 == 1.0` for `==`); the keys of an object
    # may come in another order (the golden files' order, which the comparison checks first).
    assert _typed(fast) == _typed(general)


def _typed(value: Any) -> Any:
    """`value` with each scalar's type beside it and each object's keys sorted."""
    if isinstance(value, dict):
        return sorted((key, _typed(item)) for key, item in value.items())
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def test_the_usual_push_replies_are_all_read_in_one_pass() -> None:
    taken = [line for line in _odd_lines() if plain_push_line(line) is not None]
    # Each kind of event, none, a null id, another seq, repeated and escaped keys, another order.
    assert len(taken) >= 12
    assert plain_push_line(json.dumps(PLAIN).encode()) == (3, PLAIN["events"], PLAIN["state"])


def test_plain_push_takes_the_usual_reply_the_general_checks_pass() -> None:
    for events in (PLAIN["events"], []):
        reply = {**PLAIN, "events": events}
        assert plain_push(reply)
        assert unknown_field("push", reply) is None
        before = json.dumps(reply)
        assert resolve_texts("push", reply, {}) is None
        assert json.dumps(reply) == before  # nothing was there to resolve


def test_stderr_is_drained_to_the_last_byte_before_the_mark() -> None:
    # The program logs 300 KB (more than one read of the pipe), then answers: once its reply is
    # read, a drained mark is past all it logged (what parts one case's stderr from the next's).
    text = "x" * 300_000 + "\nlast line\n"
    code = (
        "import sys; sys.stderr.write('x' * 300_000 + '\\nlast line\\n'); sys.stderr.flush(); "
        "print('{}', flush=True); sys.stdin.read()"
    )
    worker = Worker([sys.executable, "-c", code], None, family=new_family())
    try:
        # The reply read from stdout alone (as when it is in the pipe before the harness asks):
        # nothing of stderr read yet.
        while b"\n" not in worker._pending:
            select.select([worker._out], [], [], 10)
            assert worker._read_out()
        assert worker.receive(time.monotonic() + 10) == b"{}"
        assert worker.stderr_mark() < len(text)
        assert worker.stderr_mark(drain=True) == len(text)
        assert worker.stderr_since(0).endswith("last line")
    finally:
        worker.stop(kill=True)


def _fresh(code: str) -> str:
    """What `code` prints in a fresh interpreter with this checkout first on its path, and not
    under coverage (`.ci/run` measures subprocesses too, and coverage imports modules of its own:
    `selectors`, under Python 3.12)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE")}
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()


def test_the_worker_imports_nothing_of_the_harness_s_side() -> None:
    # Its start is on the critical path of every run: the harness waits for its `hello`.
    loaded = _fresh(
        "import harness.worker.program as a; a.load_target('reference:Assembler'); "
        "print(sorted(m for m in sys.modules if m.startswith(('harness', 'subprocess', "
        "'selectors', 'importlib.metadata'))))"
    )
    for module in (
        "harness.drive.process",
        "harness.drive.pipes",
        "harness.drive.replies",
        "subprocess",
        "selectors",
    ):
        assert f"'{module}'" not in loaded, loaded


def test_a_target_of_no_distribution_is_unknown_without_importlib_metadata() -> None:
    found = _fresh(
        "from harness.worker.program import _version_of; "
        "from harness.drive.inprocess import load_target; "
        "print(_version_of(load_target('reference:Assembler')), "
        "'importlib.metadata' in sys.modules)"
    )
    assert found == "unknown False"


def test_a_target_of_a_distribution_on_the_path_gets_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_target").mkdir()
    (tmp_path / "my_target" / "__init__.py").write_text("class Assembler:\n    pass\n")
    info = tmp_path / "My.Target-1.2.3.dist-info"  # as pip names it, normalized alike
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-target\nVersion: 1.2.3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert adapter._may_be_installed("my_target")
    assert not adapter._may_be_installed("my_targets")
    assert adapter._version_of(load_target("my_target:Assembler")) == "1.2.3"


def test_a_zip_archive_on_the_path_may_hold_a_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip archive
    monkeypatch.syspath_prepend(str(archive))
    assert adapter._may_be_installed("anything")


CASE = [
    _chunk({"content": "Hi"}),
    _chunk({"content": " there"}),
    _chunk({"content": "!"}, finish_reason="stop"),
]
STATE = '{"id": "c1", "reasoning_tokens": 0, "in_reasoning": false, "is_finished": false}'
NAN_STATE = STATE.replace('"reasoning_tokens": 0', '"reasoning_tokens": {"$number": "NaN"}')


def _play_garbled(driver: ProcessDriver, raw: str | None, *, ready: list[int]) -> Any:
    """The planned case CASE with its second push's reply replaced by `raw` (`{seq}` its seq),
    every reply in the pipe before the first is asked for: the steps and finish, or the crash."""
    driver.start_case()
    driver.plan(CASE, finish=False)
    worker = driver._worker
    assert worker is not None
    second = driver._ahead[1].seq
    for name in ("ready_line", "receive"):
        real = getattr(worker, name)

        def wrapped(*args: Any, _real: Any = real, _name: str = name) -> Any:
            line = _real(*args)
            if line is not None and _name == "ready_line":
                ready.append(1)
            if raw is not None and line is not None and line.startswith(b'{"seq":%d,' % second):
                return raw.replace("{seq}", str(second)).encode()
            return line

        setattr(worker, name, wrapped)
    deadline = time.monotonic() + 10
    while worker.lines_in < worker.seq and time.monotonic() < deadline:
        worker.read_ready()
        time.sleep(0.001)
    try:
        steps = [driver.push(data, n) for n, data in enumerate(CASE)]
        return steps, driver.finish(False)
    except TargetCrash as crash:
        return type(crash).__name__, crash.message, crash.details.partition("\nstderr")[0]


@pytest.mark.parametrize(
    "raw",
    [
        None,  # every reply as the worker wrote it
        "debug: not json",
        '{"seq": 99, "events": [], "state": {}}',
        '{"seq": true, "events": [], "state": ' + STATE + "}",
        '{"seq": {seq}, "skipped": true}',
        '{"seq": {seq}, "error": {"kind": "crash", "message": "boom"}}',
        '{"seq": {seq}, "error": {"kind": "protocol", "message": "no"}}',
        '{"seq": {seq}, "events": [], "state": ' + STATE + ', "zzz": 1}',
        '{"seq": {seq}, "events": [{"type": "content", "text": "x", "zzz": 1}], "state": '
        + STATE
        + "}",
        '{"seq": {seq}, "events": [{"type": "content", "text": {"$text": [[1, 0, 5]]}}], '
        '"state": ' + STATE + "}",
        '{"seq": {seq}, "events": [], "state": ' + NAN_STATE + "}",
        '{"seq": {seq}, "events": [], "state": ' + STATE.replace("}", ', "zzz": 1}') + "}",
        '{"seq": {seq}, "events": [], "state": ' + STATE.replace(": 0", ": 0.0") + "}",
        '{"seq": {seq}, "events": [], "state": ' + STATE.replace(": 0", ": true") + "}",
        '{"seq": {seq}, "events": [], "state": ' + STATE.replace('"c1"', "7") + "}",
        '{"seq": {seq}, "events": [{"type": "content", "text": 5}], "state": ' + STATE + "}",
        '{"seq": {seq}, "events": [{"type": "content"}], "state": ' + STATE + "}",
        '{"seq": {seq}, "events": [{"text": "x", "type": "content"}], "state": ' + STATE + "}",
    ],
)
def test_a_reply_read_before_it_is_asked_for_is_judged_as_any_other(
    raw: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with python_target_driver("reference:Assembler") as driver:
        driver.start()
        ready: list[int] = []
        fast = _play_garbled(driver, raw, ready=ready)
        assert ready  # the short cut (`ProcessDriver._ready`) took replies
    monkeypatch.setattr(ProcessDriver, "_ready", lambda self, data: None)
    with python_target_driver("reference:Assembler") as driver:
        driver.start()
        assert _play_garbled(driver, raw, ready=[]) == fast


@pytest.mark.parametrize("key", ["\\u0024text", "\\u0024number"])
def test_a_reference_whose_dollar_is_escaped_is_resolved_as_one_written_plainly(key: str) -> None:
    """A reply's line is looked into for references only when it may hold one: a key written
    with its dollar sign escaped (`"\\u0024text"`, which is `"$text"`) still is one."""
    value = "[[{push}, 0, 2]]" if key.endswith("text") else '"NaN"'
    found = []
    for written in (key, key.replace("\\u0024", "$")):
        text = "{" + f'"{written}": {value}' + "}"
        if key.endswith("text"):
            raw = '{"seq": {seq}, "events": [{"type": "content", "text": ' + text + "}], "
            raw += '"state": ' + STATE + "}"
        else:
            raw = '{"seq": {seq}, "events": [], "state": '
            raw += STATE.replace('"reasoning_tokens": 0', f'"reasoning_tokens": {text}') + "}"
        with python_target_driver("reference:Assembler") as driver:
            driver.start()
            push = str(driver._worker.seq + 3) if driver._worker else "0"  # the second push
            found.append(_play_garbled(driver, raw.replace("{push}", push), ready=[]))
    escaped, plain = found
    assert escaped == plain
    if key.endswith("text"):
        assert escaped[0][1]["events"][0]["text"] == CASE[1][:2]  # resolved into the payload
