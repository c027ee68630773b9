"""The harness's own errors: setup and usage problems, never conformance failures.

    ConformError            anything that stops a run before it can judge a target (exit 2)
    ├── TargetError         the target cannot be imported or called to make an assembler
    └── SuiteError          the suite is missing or malformed
        ├── RecordingError  a recording cannot be read (file, and line where there is one)
        └── GoldenError     a golden file is missing, unreadable, or of another schema

A target's wrong answer, crash or hang is not a ConformError: it is a result of the case. The
drivers raise it as a `TargetFault`, a separate branch that the runner turns into a result record
(and never reaches the `Error:` line):

    TargetFault             the target broke the contract in one case (a result, not exit 2)
    └── TargetCrash         it raised something outside the contract, died, or wrote garbage
        └── TargetTimeout   one call into it did not return within the time allowed

`harness.cli` turns the ConformError family into one `Error:` line with a hint, in one place.
"""

from __future__ import annotations

from pathlib import Path


class ConformError(Exception):
    """A setup or usage problem; `hint` says what to do about it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"


class TargetError(ConformError):
    """The target named on the command line cannot be loaded."""


class SuiteError(ConformError):
    """The suite folder is missing or malformed."""


class RecordingError(SuiteError):
    """A recording cannot be read."""

    def __init__(
        self, path: Path, message: str, *, line: int | None = None, hint: str | None = None
    ) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = path
        self.line = line


class GoldenError(SuiteError):
    """A golden file is missing, unreadable or of an unknown schema."""

    def __init__(self, path: Path, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {message}", hint=hint)
        self.path = path


class TargetFault(Exception):
    """The target broke the contract in one case: reported as that case's result."""


class TargetCrash(TargetFault):
    """The target did something outside the contract; `details` holds its frames or stderr."""

    def __init__(self, message: str, *, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class TargetTimeout(TargetCrash):
    """One call into the target did not return within the time allowed for a call."""
