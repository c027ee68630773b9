"""Classes of input (docs/spec.md section 10): what kind of input a case is, computed from its
golden file, never declared by hand.

- **valid**: no allowed outcome has a `protocol` error: a stream a server may send, which every
  client must assemble right (a `server` error, or a stream cut before its finish, is valid);
- **invalid**: every allowed outcome has a `protocol` error: input the rules refuse;
- **implementation-defined**: some allowed outcomes refuse it and some do not (the I-points).

An outcome refuses its input when one of its steps, or its finish, is a `protocol` error (after
an error step there are no more steps and no finish, so only the last step and the finish need
looking at). A run of a case in a mode has the class of its case: every mode pushes the same
input in other words (`truncated`: a prefix of it, which for a valid stream is a stream cut
before its finish: valid too); docs/spec.md section 10 says why for each mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

import msgspec


class InputClass(StrEnum):
    """What kind of input a case is (docs/spec.md section 10)."""

    VALID = "valid"
    INVALID = "invalid"
    IMPLEMENTATION_DEFINED = "implementation-defined"

    @property
    def rank(self) -> int:
        """The order reports list classes in: valid first."""
        return _RANK[self]


_RANK = {InputClass.VALID: 0, InputClass.INVALID: 1, InputClass.IMPLEMENTATION_DEFINED: 2}

#: Every class, in the order reports give them.
CLASSES: tuple[InputClass, ...] = tuple(InputClass)

PROTOCOL = "protocol"


def _refusing(error: Any) -> bool:
    return isinstance(error, Mapping) and error.get("kind") == PROTOCOL


def _last(steps: Iterable[Any]) -> Any:
    if isinstance(steps, list | tuple):
        return steps[-1] if steps else None
    found = None
    for found in steps:  # noqa: B007 (a golden file read step by step: its last step is wanted)
        pass
    return found


def refuses(outcome: Mapping[str, Any]) -> bool:
    """True when the outcome (a golden document, or one of its alternatives) fails with
    `protocol` at a step or at its finish."""
    finish = outcome.get("finish")
    if finish is not None:
        return _refusing(finish.get("error"))
    last = _last(outcome.get("steps", ()))
    return isinstance(last, Mapping) and _refusing(last.get("error"))


def class_of_outcomes(refusals: Iterable[bool]) -> InputClass:
    """The class of a case whose allowed outcomes refuse their input or not, as `refusals` say."""
    found = list(refusals)
    if not any(found):
        return InputClass.VALID
    if all(found):
        return InputClass.INVALID
    return InputClass.IMPLEMENTATION_DEFINED


def class_of(golden: Mapping[str, Any]) -> InputClass:
    """The class of the case whose golden document is `golden`: its own outcome and each of
    its alternatives."""
    outcomes = [golden, *golden.get("alternatives", ())]
    return class_of_outcomes(refuses(outcome) for outcome in outcomes)


# -- read from a golden file's bytes, without building its whole document ------------------------


class _Error(msgspec.Struct):
    kind: str = ""


class _Step(msgspec.Struct):
    error: _Error | None = None


class _Finish(msgspec.Struct):
    error: _Error | None = None


class _Outcome(msgspec.Struct):
    steps: list[_Step] = []
    finish: _Finish | None = None

    @property
    def refuses(self) -> bool:
        if self.finish is not None:
            return self.finish.error is not None and self.finish.error.kind == PROTOCOL
        last = self.steps[-1].error if self.steps else None
        return last is not None and last.kind == PROTOCOL


class _Golden(_Outcome):
    alternatives: list[_Outcome] = []


_decode_outcomes = msgspec.json.Decoder(_Golden).decode


def class_of_bytes(data: bytes) -> InputClass:
    """`class_of` a golden file's bytes: only the error kinds are read (ValueError when the
    bytes are not such a file)."""
    try:
        golden = _decode_outcomes(data)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    return class_of_outcomes(o.refuses for o in (golden, *golden.alternatives))
