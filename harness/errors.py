"""The harness's own errors: setup, usage and environment problems, never conformance failures.

Every error the harness raises for a person to act on is in this tree; `harness.cli` turns each into
one `Error:` line with a hint, in exactly one place, and exits with the error's `exit_code`:

    ConformError            anything that stops a command before it can do its job (exit 2)
    ├── TargetError         the target cannot be imported or called to make an assembler
    ├── SuiteError          the suite is missing or malformed
    │   ├── RecordingError  a recording cannot be read (file, and line where there is one)
    │   └── GoldenError     a golden file is missing, unreadable, stale or of another schema
    ├── WriteError          a file cannot be written: disk full, read-only, no permission, or
    │                       an output that would destroy an input or another output
    └── RecordError         `conform record`'s exchange with the server failed (exit 1)

    Interrupted             (a KeyboardInterrupt) SIGINT, SIGTERM or SIGHUP stopped a command that
                            writes files: exit 128 + the signal's number, its temporary files gone

A target's wrong answer, crash or hang is not a ConformError: it is a result of the case (a
`CaseResult` of `harness.check.runner`, with its status). The drivers raise it as a `TargetFault`,
a separate branch that the runner turns into that result (it never reaches the `Error:` line):

    TargetFault             the target broke the contract in one case (a result, not exit 2)
    └── TargetCrash         it raised something outside the contract, died, or wrote garbage
        └── TargetTimeout   one call into it did not return within the time allowed
"""

from __future__ import annotations

from pathlib import Path

#: The exit status of a command stopped by an error inside conform (a bug in conform).
INTERNAL_ERROR = 3


class ConformError(Exception):
    """A setup or usage problem; `hint` says what to do about it, `details` (lines shown below
    the error's one line) what was seen, such as a program's stderr."""

    #: The exit status of a command this error stops.
    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"

    def describe(self) -> str:
        """The error, its hint and its details, as lines."""
        return str(self) if not self.details else f"{self}\n{self.details}"


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
    """A golden file is missing, unreadable, stale or of an unknown schema."""

    def __init__(self, path: Path, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {message}", hint=hint)
        self.path = path


class WriteError(ConformError):
    """A file conform was asked to write cannot be written, or must not be."""

    def __init__(self, path: Path, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class RecordError(ConformError):
    """A recording that could not be made because the exchange failed (exit 1).

    `saved` is the path of the capture when it was kept anyway (`--keep-errors`).
    """

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, saved: Path | None = None) -> None:
        super().__init__(message, hint=hint)
        self.saved = saved


class Interrupted(KeyboardInterrupt):
    """A signal conform handles stopped the command; `signum` says which (exit 128 + signum)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a death by that signal."""
        return 128 + self.signum


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
