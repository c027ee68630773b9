"""The adapter kit's error mapping (`harness/clients/errors.py`): only the server's error, a
response the client refused and a stream it found cut short are the contract's errors; anything
else is a crash, raised at the client's own frame. And `peek`, which never raises."""

from __future__ import annotations

import json
import traceback

import pytest

from harness.clients import ClientErrors, StreamError, chain, malformed_json, peek, raise_for


class ServerError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(f"Error code: 500 - {message}")
        self.message = message


class RefusedResponse(ServerError):
    """A client's validation error for a response: a subclass of its server error, as
    openai-python's APIResponseValidationError is of APIError."""


class Wrapped(Exception):
    """A client's own wrapper of what it caught (litellm's APIConnectionError)."""


ERRORS = ClientErrors(server=(ServerError,), refused=(RefusedResponse,))


def _raised(make: object) -> BaseException:
    try:
        make()  # type: ignore[operator]
    except BaseException as exc:
        return exc
    raise AssertionError("nothing was raised")


def test_the_servers_error_is_server_with_its_message() -> None:
    found = ERRORS.error(ServerError("boom"))
    assert isinstance(found, StreamError) and (found.kind, found.message) == ("server", "boom")


def test_a_refused_response_is_protocol_though_it_is_a_server_error_too() -> None:
    found = ERRORS.error(RefusedResponse("bad shape"))
    assert isinstance(found, StreamError) and found.kind == "protocol"


def test_the_json_parsers_refusal_is_protocol() -> None:
    for payload in ("[DONE] ", "{", "not json"):
        found = ERRORS.error(_raised(lambda p=payload: json.loads(p)))
        assert isinstance(found, StreamError) and found.kind == "protocol", payload
    deep = _raised(lambda: json.loads("[" * 100_000 + "]" * 100_000))
    assert isinstance(deep, RecursionError) and malformed_json(deep)
    assert isinstance(ERRORS.error(deep), StreamError)


def test_any_other_value_error_is_a_crash_not_an_allowed_outcome() -> None:
    # Today's adapters mapped every ValueError to protocol, which turned pydantic validation
    # errors and client invariants into allowed outcomes (a genuine crash on a valid delta
    # passed that way).
    def invariant() -> None:
        raise ValueError("1 validation error for ChatCompletionMessage")

    exc = _raised(invariant)
    assert ERRORS.error(exc) is exc
    recursion = _raised(lambda: _recurse(0))
    assert not malformed_json(recursion) and ERRORS.error(recursion) is recursion


def _recurse(depth: int) -> int:
    return _recurse(depth + 1)


def test_a_crash_is_raised_as_what_the_client_wrapped_at_its_frame() -> None:
    def client() -> None:
        try:
            {}["choices"]  # the client's own bug
        except KeyError as exc:
            raise Wrapped("litellm.APIConnectionError: ...") from exc

    outer = _raised(client)
    inner = ERRORS.error(outer)
    assert isinstance(inner, KeyError)
    assert traceback.extract_tb(inner.__traceback__)[-1].name == "client"
    assert [type(e) for e in chain(outer)] == [Wrapped, KeyError]
    with pytest.raises(KeyError):
        raise_for(ERRORS, outer)


def test_a_server_error_inside_a_clients_wrapper_is_still_server() -> None:
    def client() -> None:
        try:
            raise ServerError("the model crashed")
        except ServerError as exc:
            raise Wrapped("MidStreamFallbackError") from exc

    found = ERRORS.error(_raised(client))
    assert isinstance(found, StreamError) and found.message == "the model crashed"


def test_a_wrapper_raised_without_from_is_followed_but_a_builtin_crash_is_not() -> None:
    def wrapper_without_from() -> None:
        try:
            raise ServerError("boom")
        except ServerError:
            raise Wrapped("wrapped")  # noqa: B904 (a wrapper raised without `from`)

    assert isinstance(ERRORS.error(_raised(wrapper_without_from)), StreamError)

    def crash_while_handling() -> None:
        try:
            raise ServerError("an earlier error the client handled")
        except ServerError:
            [][1]  # a crash of its own

    crash = _raised(crash_while_handling)
    assert ERRORS.error(crash) is crash


def test_the_clients_own_check_for_a_cut_stream_is_stream_closed_early() -> None:
    errors = ClientErrors(closed_early=lambda exc: "ended without" in str(exc))
    found = errors.error(Wrapped("Streamed response ended without a finish_reason"))
    assert isinstance(found, StreamError) and found.kind == "stream_closed_early"


@pytest.mark.parametrize(
    "payload", ["[DONE] ", "null", "[1]", "", "{", '"text"', "[" * 100_000, "{}" + "x"]
)
def test_peek_never_raises(payload: str) -> None:
    assert peek(payload) == {}


def test_peek_reads_an_object() -> None:
    assert peek('{"timings": {"predicted_n": 3}}') == {"timings": {"predicted_n": 3}}
