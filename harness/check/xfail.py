"""Expected failures: a file of case and mode globs that may fail without failing the run.

One entry a line; a `#` at the start of a line or after white space starts a comment (the
reason, when it follows an entry):

    # CASE_GLOB            [MODE_GLOBS]        # reason
    llama-server/tool_call  unknown-fields     # drops fields it does not know, see #12
    synthetic/r6_nesting_*  plain,whitespace   # nesting limit not done yet
    synthetic/r8_*                             # server errors: every mode

Case globs follow the rule of `-k` (`harness.suite.case_matches`: a shell-style glob on the whole
case id, or a folder of it); mode globs match whole mode names (`fnmatch`, case-sensitive); the
modes are one glob or several separated by commas, and a missing mode means every mode. A
matching failure (failed, crashed, timed out) becomes `xfailed`; a matching pass becomes
`xpassed`, which fails the run, so the list can only shrink. The first line that matches a result
is the one that applies. An entry that matches no case of the suite (or no mode) is a usage
error, so a renamed case cannot leave a stale line behind.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.check.runner import FAILURES, PASSED, XFAILED, XPASSED, CaseResult, Expectation
from harness.errors import ConformError
from harness.files import write_report
from harness.quoting import shorten, shown
from harness.suite.cases import case_matches

_REASON_CHARS = 200
_GLOB_SPECIAL = re.compile(r"([*?\[\s#,])")
_COMMENT = re.compile(r"(?:^|(?<=\s))#")  # a `#` at the start or after white space
_FIELD = re.compile(r"(?:\[[^\]]+\]|[^\s\[]|\[)+")  # white space inside [...] is part of a glob


@dataclass(frozen=True, slots=True)
class XfailEntry:
    """One line of an expected-failures file."""

    case_glob: str
    mode_glob: str
    reason: str
    line: int

    def matches(self, case_id: str, mode: str) -> bool:
        """True when this line covers `case_id` in `mode`."""
        return case_matches(case_id, self.case_glob) and self.matches_mode(mode)

    def matches_mode(self, mode: str) -> bool:
        """True when one of this line's mode globs matches `mode`."""
        return any(fnmatch.fnmatchcase(mode, glob) for glob in self.mode_glob.split(","))


@dataclass(frozen=True)
class XfailList:
    """The entries of one expected-failures file, in file order."""

    path: Path
    entries: tuple[XfailEntry, ...]

    @classmethod
    def load(cls, path: Path) -> XfailList:
        """Read `path`; ConformError (a usage error) when unreadable or a line is malformed."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConformError(
                f"no expected-failures file {path}",
                hint="'conform run TARGET --write-xfail FILE' writes one",
            ) from None
        except (OSError, UnicodeError) as exc:
            raise ConformError(f"cannot read {path}: {exc}") from None
        return cls(path, tuple(parse_lines(path, text)))

    def check(self, case_ids: Iterable[str], modes: Sequence[str]) -> None:
        """ConformError naming the first line that matches no case id, or no mode."""
        ids = list(case_ids)
        for entry in self.entries:
            if not any(case_matches(case_id, entry.case_glob) for case_id in ids):
                raise ConformError(
                    f"{self.path}:{entry.line}: '{entry.case_glob}' matches no case of the suite",
                    hint="'conform list' shows the case ids; remove or fix the line",
                )
            for glob in entry.mode_glob.split(","):
                if not any(fnmatch.fnmatchcase(mode, glob) for mode in modes):
                    raise ConformError(
                        f"{self.path}:{entry.line}: mode '{glob}' matches no mode",
                        hint=f"the modes are {', '.join(modes)}",
                    )

    def find(self, case_id: str, mode: str) -> XfailEntry | None:
        """The first entry that covers `case_id` in `mode`."""
        for entry in self.entries:
            if entry.matches(case_id, mode):
                return entry
        return None

    def source(self, entry: XfailEntry) -> str:
        """Where `entry` stands: `FILE:LINE`."""
        return f"{self.path}:{entry.line}"

    def apply(self, result: CaseResult) -> CaseResult:
        """`result` as this list judges it: failures it covers become xfailed, passes xpassed."""
        entry = self.find(result.case_id, result.mode)
        if entry is None or (result.status != PASSED and result.status not in FAILURES):
            return result
        expectation = Expectation(entry.reason, self.source(entry), result.status)
        status = XPASSED if result.status == PASSED else XFAILED
        return dataclasses.replace(result, status=status, expectation=expectation)


def parse_lines(path: Path, text: str) -> list[XfailEntry]:
    """The entries of an expected-failures file's text; ConformError on a malformed line."""
    entries: list[XfailEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        entry_text, *comment = _COMMENT.split(raw, maxsplit=1)
        reason = comment[0] if comment else ""
        fields = _FIELD.findall(entry_text)
        if not fields:
            continue
        if len(fields) > 2:
            raise ConformError(
                f"{path}:{number}: expected 'CASE_GLOB [MODE_GLOB]  # reason', got {raw.strip()!r}",
                hint="write a space in a case id as '[ ]'",
            )
        mode_glob = fields[1] if len(fields) == 2 else "*"
        entries.append(XfailEntry(fields[0], mode_glob, reason.strip(), number))
    return entries


def escape_glob(text: str) -> str:
    """A glob that matches exactly `text` and holds no white space or `#`."""
    return _GLOB_SPECIAL.sub(lambda m: f"[{m.group()}]", text)


def baseline_reason(result: CaseResult) -> str:
    """Why a result failed, on one short line: its status and first mismatch or crash message."""
    if result.expectation is not None and result.expectation.reason:
        return result.expectation.reason  # keep what a person wrote when re-baselining
    status = result.expectation.was if result.expectation is not None else result.status
    if result.mismatches:
        first = result.mismatches[0]
        detail = (
            f"{first.path}: expected {shown(first.expected, 60)}, got {shown(first.actual, 60)}"
        )
    elif result.crash is not None:
        detail = result.crash.message
    else:
        detail = ""
    text = " ".join(f"{status}: {detail}".split()) if detail else status
    return shorten(text, _REASON_CHARS)


def failing(result: CaseResult) -> bool:
    """True when the target failed this case, whether or not a line expected it."""
    return result.status in FAILURES or result.status == XFAILED


def baseline_text(results: Iterable[CaseResult]) -> str:
    """An expected-failures file listing every failing case and mode of `results`."""
    rows = [
        (escape_glob(r.case_id), escape_glob(r.mode), baseline_reason(r))
        for r in results
        if failing(r)
    ]
    lines = [
        "# Expected failures of conform (written by 'conform run --write-xfail').",
        "# One line each: CASE_GLOB [MODE_GLOB]  # reason. Remove a line once its case passes.",
    ]
    case_width = max((len(case) for case, _, _ in rows), default=0)
    mode_width = max((len(mode) for _, mode, _ in rows), default=0)
    lines += [
        f"{case:<{case_width}}  {mode:<{mode_width}}  # {reason}".rstrip()
        for case, mode, reason in rows
    ]
    return "\n".join(lines) + "\n"


def write_baseline(path: Path, results: Iterable[CaseResult]) -> int:
    """Write the baseline of `results` to `path` atomically; the number of entries written."""
    results = list(results)
    write_report(path, baseline_text(results))
    return sum(1 for r in results if failing(r))
