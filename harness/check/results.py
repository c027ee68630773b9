"""The records a run produces: one `CaseResult` per case and mode, with its mismatches, its
crash and the expected-failure line that matched it.

They are plain frozen data: the runner (`harness.check.runner`) makes them, `harness.check.xfail`
judges them against a baseline, and the reporters (`harness.reports`) only read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.status import Status
from harness.drive.blame import Origin
from harness.suite.classes import InputClass

# The status names, for the code and tests that import them from here.
PASSED, FAILED, CRASHED = Status.PASSED, Status.FAILED, Status.CRASHED
TIMED_OUT, XFAILED, XPASSED = Status.TIMED_OUT, Status.XFAILED, Status.XPASSED
#: The levels of conformance (docs/spec.md, section 6): every step's events and state, or only
#: what every client has (whether each push failed, and how; the finish).
FULL, COMPLETION = "full", "completion"
LEVELS = (FULL, COMPLETION)


def completion_step(step: dict[str, Any]) -> dict[str, Any]:
    """What the `completion` level compares of a step: its line and its error, if any."""
    kept = {"line": step["line"]} if "line" in step else {}
    if "error" in step:
        kept["error"] = step["error"]
    return kept


#: Where a crash happened: making the assembler, a push, or finish.
NEW, PUSH, FINISH = "new", "push", "finish"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One field where the target departs from the golden file, and where it happened."""

    path: str
    expected: Any
    actual: Any
    step: int | None = None  # None: at finish
    line: int | None = None
    payload: str | None = None  # the payload pushed, when the mode changed it
    said: str | None = None  # the target's own `kind: message` when it raised here


@dataclass(frozen=True, slots=True)
class Crash:
    """The target raised outside the contract or returned something unreadable."""

    message: str
    details: str
    step: int | None
    line: int | None
    payload: str | None
    at: str = ""  # NEW, PUSH or FINISH; "" means PUSH when `step` is set, else FINISH
    #: Whose code it happened in, and where (`harness.drive.blame`); None when unknown (a
    #: timeout, a program that died, a target in another language that does not say).
    origin: Origin | None = None

    @property
    def stage(self) -> str:
        """The call the target was in: `new` (making the assembler), `push` or `finish`."""
        return self.at or (PUSH if self.step is not None else FINISH)


@dataclass(frozen=True, slots=True)
class Expectation:
    """The expected-failure line that matched a result (`harness.check.xfail`)."""

    reason: str
    source: str  # "FILE:LINE"
    was: Status  # the status before the expectation applied: passed, failed, crashed, timed-out


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case in one mode."""

    case_id: str
    mode: str
    recording: str
    status: Status
    duration: float
    mismatches: tuple[Mismatch, ...] = ()
    crash: Crash | None = None
    expectation: Expectation | None = None
    #: What the case pins (`R6`, `I3`, `SSE`), from its golden file.
    pins: tuple[str, ...] = ()
    #: For a case that pins implementation-defined points: the choices of the outcome the target
    #: matched (passed), or of the closest one (failed); each a combination like {"I3": "ignore"}.
    choice: tuple[dict[str, str], ...] = ()
    #: The seed of a mode that depends on it (None for the others).
    seed: int | None = None
    #: `truncated` mode: the number of payloads pushed before the `finish` that went wrong.
    cut: int | None = None
    #: What the target wrote to stderr during a failed case (a crash's details carry theirs).
    stderr: str | None = None
    #: How many allowed outcomes were compared before the target was judged (1 for most cases).
    outcomes: int = 1
    #: True when --strict or --choose ruled out some of the case's allowed outcomes.
    narrowed: bool = False
    #: Steps (and the finish) that differ beyond the mismatches kept (a run keeps 100): counted,
    #: not listed.
    unlisted: int = 0
    #: The class of the case's input (docs/spec.md section 10), from its golden file: valid,
    #: invalid or implementation-defined; None in a report written before classes existed.
    input_class: InputClass | None = None
    #: The case is a real capture from a server (its recording says `source: real ...`).
    real: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):  # a plain string, from a caller's own code
            object.__setattr__(self, "status", Status(self.status))
        if self.input_class is not None and not isinstance(self.input_class, InputClass):
            object.__setattr__(self, "input_class", InputClass(self.input_class))

    @property
    def conforms(self) -> bool:
        """The target did what the golden file says."""
        return self.status.conforms
