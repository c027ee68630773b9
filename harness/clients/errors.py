"""What a client raised, as the contract's error or as a crash that names the client's frame.

Only three things a client raises are the contract's errors:

- the **server's error** (an `error` payload, which the client raises as its own exception type,
  `openai.APIError` for openai-python): `server`, with the server's message;
- the client **refusing a malformed response**: the JSON parser's error for a payload that is not
  JSON (`json.JSONDecodeError`, or a `RecursionError` raised inside the `json` module for one
  nested too deep), or the exception the client raises when it validates a response and refuses
  it (`openai.APIResponseValidationError`): `protocol`;
- a stream that ends before its finish, when the client itself checks that: `stream_closed_early`.

Everything else is a **crash**, never an allowed outcome: a `TypeError` or `AttributeError` in
the client's accumulator, an `AssertionError` of one of its invariants, a pydantic
`ValidationError` of one of its own models, whatever the input. Clients wrap what they caught in
exceptions of their own (litellm's `APIConnectionError`, Pydantic AI's `ModelAPIError`), so the
exception is followed down its chain (`__cause__`, `__context__`, litellm's
`original_exception`): a crash is raised again as the **innermost** exception of that chain, whose
traceback ends at the frame where it happened, which is where conform's report places it
(`harness.drive.blame`), not at the frame where the client wrapped it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.clients.llama import StreamError, protocol

_JSON_PACKAGE = os.path.dirname(os.path.realpath(json.__file__)) + os.sep
_WRAPPERS = (StopIteration, StopAsyncIteration, GeneratorExit)


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what it wraps, innermost last (each once): its `__cause__`, else litellm's
    `original_exception`, else, for a client's own exception type raised while it handled
    another (a wrapper raised without `from`), that `__context__`. A built-in exception raised
    while another was handled is a crash of its own: its context is not followed."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        wrapped = getattr(link, "original_exception", None)
        if link.__cause__ is not None:
            link = link.__cause__
        elif isinstance(wrapped, BaseException):
            link = wrapped
        elif type(link).__module__ != "builtins" and not link.__suppress_context__:
            link = link.__context__
        else:
            link = None


def malformed_json(exc: BaseException) -> bool:
    """True for the JSON parser's refusal of a payload: `json.JSONDecodeError` (and its
    subclasses), or an error raised inside the `json` module (too deep: `RecursionError`)."""
    if isinstance(exc, json.JSONDecodeError):
        return True
    if not isinstance(exc, RecursionError | ValueError):
        return False
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and os.path.realpath(last.tb_frame.f_code.co_filename).startswith(
        _JSON_PACKAGE
    )


def _message(exc: BaseException) -> str:
    found = getattr(exc, "message", None)
    return found if isinstance(found, str) else str(exc)


#: Exception types, or a test of an exception: what a client raises for one kind of error.
Matcher = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


def _matches(matcher: Matcher, exc: BaseException) -> bool:
    return isinstance(exc, matcher) if isinstance(matcher, tuple) else matcher(exc)


def _never(exc: BaseException) -> bool:
    return False


@dataclass(frozen=True)
class ClientErrors:
    """How a client says what went wrong: its exceptions (types, or a test) for the server's
    error and for a response it refused, and for a stream that ended early."""

    #: The client's exception for the server's `error` payload (its message is the server's).
    server: Matcher = ()
    #: The client's exceptions for a response it validated and refused (checked before `server`,
    #: which may be their base class).
    refused: Matcher = ()
    #: The client's own error for a stream that ended before its finish reason.
    closed_early: Matcher = _never
    #: The server's message carried by a `server` exception.
    message: Callable[[BaseException], str] = _message

    def error(self, exc: BaseException) -> BaseException:
        """What the adapter raises for `exc`: a `StreamError` of the contract's kind, or the
        innermost exception of its chain (a crash, at the client's own frame)."""
        links = list(chain(exc))
        for link in links:
            if _matches(self.closed_early, link):
                return StreamError("stream_closed_early", _message(link))
        for link in links:
            if _matches(self.refused, link) or malformed_json(link):
                return protocol(f"{type(link).__name__}: {_message(link)}")
            if _matches(self.server, link):
                return StreamError("server", self.message(link))
        inner = [link for link in links if not isinstance(link, _WRAPPERS)]
        return inner[-1] if inner else exc


def raise_for(errors: ClientErrors, exc: BaseException) -> None:
    """Raise what `errors` makes of `exc`: the contract's error (from `exc`), or the crash as
    it happened."""
    found = errors.error(exc)
    if isinstance(found, StreamError):
        raise found from exc
    raise found
