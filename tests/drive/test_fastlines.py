"""The fast lines between conform and its own worker (`harness.drive.fastlines`) say what the plain
ones say (`harness.drive.messages`): each line is read as the plain reader reads it (the same reply
or request, or the same exception; a field the protocol does not define, which the worker never
writes, is not looked for), and each line written is read back as the plain line is, for
every JSON value and for what msgspec and the json module do not treat alike (NaN, the
infinities, lone surrogates, numbers beyond a float, subclasses of str, int and float, nesting
near the recursion limit, text that is not JSON)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.drive import fastlines, messages
from harness.drive.messages import (
    Failed,
    Finish,
    Finished,
    Hello,
    New,
    Ok,
    Pass,
    Push,
    Pushed,
    Reply,
    Request,
    Started,
)
from harness.drive.process import ProcessDriver
from tests.folds import each

PUSH, FINISH, NEW = Push(7, "x"), Finish(7, False), New(7)


class Text(str):
    pass


class Number(float):
    def __repr__(self) -> str:
        return "not a number"


class Whole(int):
    def __repr__(self) -> str:
        return "not an integer"


def outcome(read: Any, *args: Any, **options: Any) -> Any:
    """What a reader makes of its input: its value, or its exception's type and words."""
    try:
        return ("value", read(*args, **options))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


def same_value(a: Any, b: Any) -> bool:
    """Equal JSON values of the same types all the way down (NaN equal to NaN)."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False) and repr(a) == repr(b)


#: Lines a reply may be, conform's own worker's and stranger ones.
REPLY_LINES = [
    b'{"seq":7,"events":[{"type":"content","text":"a\\u00e9\xc3\xa9"}],"state":{"id":null,'
    b'"reasoning_tokens":0,"in_reasoning":false,"is_finished":false}}',
    b'{"seq":7,"events":[{"type":"progress","total":1e400,"cache":-0,"processed":-0.0,'
    b'"time_ms":NaN}],"state":{}}',
    b'{"seq":7,"events":[],"state":{"id":"\\ud800"}}',
    b'{"seq":7,"events":[],"state":{"id":123456789012345678901234567890}}',
    b'{"seq":7,"events":[],"state":{"id":Infinity,"x":-Infinity}}',
    b'{"seq":7,"events":[],"state":{},"state":{"id":1}}',
    b'{"seq":7,"events":[],"state":{"surplus":1}}',
    b'{"seq":7,"error":{"kind":"protocol","message":"bad chunk"}}',
    b'{"seq":7,"error":{"kind":"bad_request","message":"what?"}}',
    b'{"seq":7,"error":"crash"}',
    b'{"seq":8,"events":[],"state":{}}',
    b'{"seq":7.0,"events":[],"state":{}}',
    b'{"seq":7,"completion":{"content":"x","timings":{"prompt_ms":0.1}}}',
    b'{"seq":7,"ok":true}',
    b"[1,2]",
    b"not json",
    b"\xff\xfe",
    b"\xef\xbb\xbf{}",
    b'{"seq":7,"events":[' + b"[" * 2000 + b"]" * 2000 + b'],"state":{}}',
    b"",
]


def named(lines: list[bytes]) -> list[tuple[str, bytes]]:
    """Lines with their numbers and (the start of) their text, as a failure names them."""
    return [(f"line {n} {line[:60]!r}", line) for n, line in enumerate(lines)]


def test_a_reply_line_is_read_as_the_plain_reader_reads_it() -> None:
    requests = {"push": PUSH, "finish": FINISH, "new": NEW}
    each(
        [
            (f"{name}, {line_name}", (line, request))
            for name, request in requests.items()
            for line_name, line in named(REPLY_LINES)
        ],
        _reply_read_as_the_plain_reader_reads_it,
    )


def _reply_read_as_the_plain_reader_reads_it(line_and_request: tuple[bytes, Request]) -> None:
    line, request_ = line_and_request
    fast = outcome(fastlines.own_reply, line, request_)
    plain = outcome(messages.read_reply, line, request_, None, non_finite=True, own=True)
    assert fast[0] == plain[0]
    if fast[0] == "value":
        assert type(fast[1]) is type(plain[1])
        assert same_value(messages.members(fast[1]), messages.members(plain[1]))
    else:
        assert fast[1:] == plain[1:]


def test_a_step_read_fast_is_the_step_of_the_reply() -> None:
    each(named(REPLY_LINES), _step_read_fast_is_the_step_of_the_reply)


def _step_read_fast_is_the_step_of_the_reply(line: bytes) -> None:
    step = fastlines.own_step(line, PUSH, 3)
    if step is not None:  # else the driver reads the line as any reply
        assert same_value(step, ProcessDriver._step(fastlines.own_reply(line, PUSH), 3))


def test_a_reply_of_conform_s_own_worker_is_not_looked_for_unknown_fields() -> None:
    line = b'{"seq":7,"events":[],"state":{"surplus":1}}'
    with pytest.raises(messages.BadReply, match=r"unknown field \$\.state\.surplus"):
        messages.read_reply(line, PUSH)
    reply = fastlines.own_reply(line, PUSH)
    assert messages.members(reply) == {"seq": 7, "events": [], "state": {"surplus": 1}}


REQUEST_LINES = [
    b'{"seq":3,"op":"pass","pushes":["a","\\ud83d\\ude00","\\udc00",""],"thinking_capped":null}',
    b'{"seq":3,"op":"pass","pushes":["\xc3\xa9"],"thinking_capped":true,"later":[1e400]}',
    b'{"seq":3,"op":"push","data":"x","data":"y"}',
    b'{"seq":3,"op":"finish","thinking_capped":1}',
    b'{"seq":3.0,"op":"new"}',
    b'{"seq":3,"op":"hello","protocol":1}',
    b'{"seq":3,"op":"bye","extra":' + b"[" * 2000 + b"]" * 2000 + b"}",
    b"[]",
    b"\xff",
    b"{",
]


def test_a_request_line_is_read_as_the_plain_reader_reads_it() -> None:
    each(named(REQUEST_LINES), _request_read_as_the_plain_reader_reads_it)


def _request_read_as_the_plain_reader_reads_it(line: bytes) -> None:
    fast = outcome(fastlines.own_request, line)
    plain = outcome(messages.read_request, line)
    assert fast[0] == plain[0]
    if fast[0] == "value":
        assert fast[1] == plain[1]
    else:
        assert fast[1:] == plain[1:]


def state(value: Any) -> dict[str, Any]:
    return {"id": value, "reasoning_tokens": 0, "in_reasoning": False, "is_finished": False}


ODD_VALUES = [
    float("nan"),
    float("inf"),
    -float("inf"),
    -0.0,
    1e16,
    5e-324,
    2**70,
    -(2**64),
    Text("sub"),
    Number(1.5),
    Whole(3),
    "\ud800",
    "é\u2028\x00\x1f\x7f😀",
    None,
    True,
]

REPLIES: list[Reply] = [
    *(Pushed(7, [{"type": "content", "text": value}], state(value)) for value in ODD_VALUES),
    Finished(7, {"content": "x", "timings": {"prompt_ms": float("nan")}, "tool_calls": []}),
    Finished(7, {"content": "é", "tool_calls": [{"id": "a", "name": None, "arguments": "{}"}]}),
    Ok(7),
    Failed(7, "server", "nope é \ud800"),
    Failed(None, "bad_request", "what?"),
    Started(7, "reference:Assembler", "1.0", "python"),
]


def test_a_reply_written_fast_is_read_as_the_plain_line_is() -> None:
    each(
        [(f"reply {n} {reply!r:.80}", reply) for n, reply in enumerate(REPLIES)],
        _reply_written_fast_read_as_the_plain_line_is,
    )


def _reply_written_fast_read_as_the_plain_line_is(reply: Reply) -> None:
    request = FINISH if isinstance(reply, Finished) else PUSH
    request = NEW if isinstance(reply, Ok) else Hello(7) if isinstance(reply, Started) else request
    plain = outcome(messages.reply_line, reply)
    fast = outcome(fastlines.reply_line, reply)
    assert fast[0] == plain[0]
    if plain[0] == "raised":
        assert fast[1:] == plain[1:]
        return
    read_fast = outcome(messages.read_reply, fast[1], request, None, non_finite=True)
    read_plain = outcome(messages.read_reply, plain[1], request, None, non_finite=True)
    assert read_fast[0] == read_plain[0]
    if read_fast[0] == "value":
        assert same_value(messages.members(read_fast[1]), messages.members(read_plain[1]))
    else:
        assert read_fast[1:] == read_plain[1:]


PASSES = {
    "unicode": ["a", "é😀"],
    "surrogate": ["\ud800x", "b"],
    "subclass": [Text("sub")],
    "none": [],
    "escapes": ['{"a":\n1}\t\\"'],
}


def test_a_pass_written_fast_is_read_as_the_plain_line_is() -> None:
    each(
        [
            (f"{name}, thinking_capped {capped}", Pass(4, pushes, capped))
            for capped in (None, True, False)
            for name, pushes in PASSES.items()
        ],
        _pass_written_fast_read_as_the_plain_line_is,
    )


def _pass_written_fast_read_as_the_plain_line_is(request: Pass) -> None:
    assert messages.read_request(fastlines.pass_line(request)) == messages.read_request(
        messages.request_line(request)
    )


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(events=st.lists(st.dictionaries(st.text(max_size=8), JSON, max_size=4), max_size=3))
def test_any_step_written_fast_is_read_as_the_plain_line_is(events: list[dict[str, Any]]) -> None:
    reply = Pushed(7, events, state(None))
    plain = outcome(messages.reply_line, reply)
    fast = outcome(fastlines.reply_line, reply)
    assert fast[0] == plain[0]
    if plain[0] == "value":
        read_fast = outcome(fastlines.own_reply, fast[1], PUSH)
        read_plain = outcome(messages.read_reply, plain[1], PUSH, None, non_finite=True, own=True)
        assert read_fast[0] == read_plain[0]
        if read_fast[0] == "value":
            assert same_value(messages.members(read_fast[1]), messages.members(read_plain[1]))
            step = fastlines.own_step(fast[1], PUSH, 3)
            assert step is None or same_value(step, ProcessDriver._step(read_plain[1], 3))
        else:
            assert read_fast[1:] == read_plain[1:]
