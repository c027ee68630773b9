"""The protocol's lines: `encode_line` writes exactly what `json` writes, whatever it is given.

`encode_line` takes msgspec's path only for values both write alike (`harness.drive.wire._plain`);
these tests compare it with `json.dumps` over many values, odd ones included (subclasses of the
JSON types, non-finite floats, keys that are not strings, types only msgspec knows).
"""

from __future__ import annotations

import datetime
import enum
import json
import random
from collections import OrderedDict
from typing import Any

from harness.drive.wire import decode_line, encode_line, encode_reply


class _Text(str):
    pass


class _Number(enum.IntEnum):
    ONE = 1


class _Object(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


_LEAVES: list[Any] = [
    0,
    -7,
    2**70,
    True,
    None,
    "text",
    "caf\u00e9",
    "\ud800",
    1.5,
    float("nan"),
    float("inf"),
    _Text("sub"),
    _Number.ONE,
    b"bytes",
    datetime.date(2026, 1, 1),
    (1, 2),
    {1, 2},
]


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.random()
    if depth > 3 or pick < 0.4:
        return rng.choice(_LEAVES)
    size = rng.randrange(4)
    if pick < 0.7:
        kind = rng.choice([dict, _Object, OrderedDict])
        keys: list[Any] = ["a", "b", _Text("c"), 1, True, None, 2.5]
        return kind((rng.choice(keys), _value(rng, depth + 1)) for _ in range(size))
    kind_list = rng.choice([list, _List])
    return kind_list(_value(rng, depth + 1) for _ in range(size))


def _meaning(encode: Any, value: Any) -> Any:
    """What `encode(value)` means as JSON, or the type of the error it raised."""
    try:
        line = encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc)
    text = line if isinstance(line, str) else line.decode("utf-8")
    return json.loads(text)


def _reply_line(value: Any) -> bytes:
    return encode_line(value, ascii_only=False)


def _json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=False)


def test_encode_line_writes_what_json_writes() -> None:
    rng = random.Random(22)
    for _ in range(3000):
        value = {"seq": rng.randrange(100), "events": [_value(rng, 0)], "state": _value(rng, 1)}
        try:  # requests: byte for byte what `json` writes, all ASCII
            expected: Any = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            expected = type(exc)
        else:
            expected = expected.encode("ascii") + b"\n"
        try:
            found: Any = encode_line(value, ascii_only=True)
        except (TypeError, ValueError) as exc:
            found = type(exc)
        assert found == expected, value
        # replies: UTF-8 (or ASCII where msgspec cannot write it), meaning what `json` means
        assert _meaning(_reply_line, value) == _meaning(_json_text, value), value


def test_a_plain_reply_round_trips() -> None:
    reply = {
        "seq": 3,
        "events": [{"type": "content", "text": "Hello \u00e9"}, {"type": "progress", "total": 1}],
        "state": {"id": "x", "reasoning_tokens": 0, "in_reasoning": False, "is_finished": False},
    }
    line = encode_line(reply, ascii_only=False)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_line(line[:-1]) == reply
    assert encode_line(reply, ascii_only=True).isascii()


def _outcome(encode: Any, value: Any) -> Any:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc)


def test_encode_reply_writes_what_encode_line_writes_for_a_worker_s_reply() -> None:
    # The worker's own objects (the reply, its events, its state, its completion) have its own
    # string keys; the values in them are the target's, anything at all.
    rng = random.Random(23)
    for _ in range(3000):
        events = [{"type": "content", "text": _value(rng, 1)} for _ in range(rng.randrange(3))]
        events += [_value(rng, 1)] if rng.random() < 0.3 else []
        value = {
            "seq": rng.randrange(100),
            "events": events,
            "state": {"id": _value(rng, 2), "is_finished": rng.choice(_LEAVES)},
            "completion": {"timings": _value(rng, 1), "content": rng.choice(_LEAVES)},
        }
        found = _outcome(encode_reply, value)
        assert found == _outcome(lambda v: encode_line(v, ascii_only=False), value), value
