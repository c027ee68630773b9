"""The fast form of the lines conform and its own worker (`python -m harness.adapter`) exchange:
msgspec's JSON encoder and decoder where they give what the plain form gives (the json module, in
`harness.drive.messages`), and the plain form itself everywhere else.

Through a worker every push is a request written and a reply read on each side; with the json
module that was about a fifth of the CPU of the whole suite through a worker (README, "Speed").
msgspec reads and writes the same JSON values several times faster, but not all of them the same
way, so each function here takes the plain form whenever they could differ:

- decoding (`own_reply`, `own_request`): msgspec first; anything it refuses goes to the plain
  reader, which decides (`NaN` and the infinities, a lone surrogate escape, a number beyond a
  float, nesting near Python's recursion limit, text that is not JSON at all). What msgspec
  decodes is the value `json.loads` gives: objects as dicts (a repeated key keeps the last value,
  in its first place), integers of any length, floats correctly rounded, the same strings. A
  reply's fields are not looked for ones the protocol does not define, which conform's own
  worker never writes (the one way `own_reply` differs from the plain reader).
- encoding (`reply_line`, `pass_line`): msgspec writes UTF-8 instead of `\\uXXXX` escapes (the
  reader decodes both to the same text) and a non-finite float as `null`; so a reply whose line
  holds a NaN or an infinity, a reply that is not a step, a finish or an `ok`, a value of a type
  msgspec refuses (a subclass of str, int or float) and a text with a lone surrogate (which UTF-8
  cannot hold) are written by the plain form. The values of a step or a finish are plain JSON
  scalars by then (`harness.drive.normalize`), which both write alike.

`tests/drive/test_fastlines.py` holds each function to its plain form.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from harness.drive import messages
from harness.drive.messages import Finished, Ok, Pass, Push, Pushed, Reply, Request
from harness.drive.reply_form import Validator

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
#: What msgspec may refuse where the plain form decides instead.
_REFUSED = (msgspec.DecodeError, RecursionError)
#: What msgspec may raise where the plain form writes the line (or says why it cannot).
_CANNOT = (TypeError, ValueError, OverflowError, RecursionError)
#: Replies whose values `harness.drive.normalize` made (or none at all).
_PLAIN_VALUES = (Pushed, Finished, Ok)


def own_reply(line: bytes, request: Request, validator: Validator | None = None) -> Reply:
    """`messages.read_reply(line, request, validator, non_finite=True, own=True)`, faster: a line
    of conform's own worker, whose fields are the protocol's (`messages.reply_of`)."""
    try:
        decoded = _decode(line)
    except _REFUSED:
        return messages.read_reply(line, request, validator, non_finite=True, own=True)
    return messages.reply_of(decoded, request, validator, own=True)


def own_step(line: bytes, request: Push, at: int) -> dict[str, Any] | None:
    """The golden step (at recording line `at`) that a reply line of conform's own worker to the
    push `request` stands for, when it is a plain step (not an error): what the driver makes of
    `own_reply(line, request)` (`ProcessDriver._step`), without the reply between them; None for
    any other line, which is read the plain way."""
    try:
        reply = _decode(line)
    except _REFUSED:
        return None
    if type(reply) is not dict or len(reply) != 3:
        return None
    seq, events, state = reply.get("seq"), reply.get("events"), reply.get("state")
    if type(seq) is not int or seq != request.seq:
        return None
    if type(events) is not list or type(state) is not dict:
        return None
    return {"line": at, "events": events, "state": state}


def own_request(line: bytes) -> Request:
    """`messages.read_request(line)`, faster."""
    try:
        decoded = _decode(line)
    except _REFUSED:
        return messages.read_request(line)
    return messages.request_of(decoded)


def reply_line(reply: Reply) -> bytes:
    """`messages.reply_line(reply)`, or a line the harness reads as the same reply, faster."""
    if type(reply) is Pushed:  # most replies: spared `reply_object`'s generic reading
        message: Any = {"seq": reply.seq, "events": reply.events, "state": reply.state}
    elif isinstance(reply, _PLAIN_VALUES):
        message = messages.reply_object(reply)
    else:
        return messages.reply_line(reply)
    try:
        line = _encode(message)
        # msgspec writes a NaN or an infinity as `null`: a line with a `null` (about a quarter
        # of replies: a tool call piece with no id yet) is looked through for one
        usual = b"null" not in line or not _non_finite(message)
    except _CANNOT:
        pass
    else:
        if usual:
            return line + b"\n"
    return messages.reply_line(reply)


def _non_finite(value: Any) -> bool:
    """True when `value` holds a float that is not finite, which msgspec writes as `null`
    (RecursionError for one nested too deep to look through)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(key) or _non_finite(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_non_finite(item) for item in value)
    return False


def pass_line(request: Pass) -> bytes:
    """`messages.request_line(request)`, or a line the worker reads as the same request, faster."""
    message: dict[str, Any] = {
        "seq": request.seq,
        "op": request.op,
        "pushes": request.pushes,
        "thinking_capped": request.thinking_capped,
    }
    if request.mark is not None:
        message["mark"] = request.mark
    try:
        return _encode(message) + b"\n"
    except _CANNOT:
        return messages.request_line(request)
