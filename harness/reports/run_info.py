"""What a run was, besides its results (`RunInfo`), and the commands that reproduce one of its
results: `reproduce` as the run's own `rerun:` lines print it, `pasted_command` as a problem's,
which works pasted into any shell."""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from harness.check.modes import DEFAULT_SEED
from harness.check.results import CaseResult
from harness.drive.limits import LIMIT_REACHED
from harness.errors import ConformError
from harness.reports.text import recording_path
from harness.suite.cases import default_suite_root, exact_args
from harness.suite.recording import id_of_name, name_of_id


def conform_version() -> str:
    """The installed conform's version."""
    from importlib import metadata  # here: a run that writes no report needs no version

    try:
        return metadata.version("conform")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class RunInfo:
    """What was run: the facts every report states besides the results."""

    target: str
    suite: Path
    cases: int
    modes: tuple[str, ...]
    seed: int
    duration: float = 0.0
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    interrupted: bool = False  # stopped by a signal: results are the finished cases only
    #: Set when conform itself failed mid-run: the error; the results are those run before it.
    stopped: str | None = None
    #: Every suite run, when --suite named several (`suite` is the first).
    suites: tuple[Path, ...] = ()
    #: `python` for a TARGET (module:Class), `exec` for an --exec program.
    kind: str = "python"
    #: `--shard K/N` as (K, N): the run covers that shard of the cases only.
    shard: tuple[int, int] | None = None
    #: The level of conformance the run judged (`full` or `completion`).
    level: str = "full"
    #: The options a command reproducing one result must repeat (`--strict`, `--level ...`).
    rerun: tuple[str, ...] = ()
    #: The folder the run was started in, and the PYTHONPATH it had: what a Python target
    #: needs to import again (a command pasted elsewhere starts with `cd`); "" when unknown.
    cwd: str = ""
    pythonpath: str = ""

    def recording_file(self, result: CaseResult) -> Path:
        """The recording's file: in the suite that holds it."""
        name = name_of_id(recording_path(result))
        for root in self.suites or (self.suite,):
            if (root / name).is_file():
                return root / name
        return self.suite / name

    @property
    def partial(self) -> bool:
        """True when the results are not the whole run asked for: interrupted, stopped by an
        error inside conform, or one shard of several."""
        return self.interrupted or self.stopped is not None or self.shard is not None

    def why_partial(self) -> str | None:
        """Why the results are partial, in a few words; None when they are complete."""
        if self.interrupted:
            return "interrupted"
        if self.stopped is not None and self.stopped.startswith(LIMIT_REACHED):
            return "stopped: the target used up the open files"
        if self.stopped is not None:
            return "stopped by an error inside conform"
        if self.shard is not None:
            return f"shard {self.shard[0]} of {self.shard[1]}"
        return None


def reproduce(info: RunInfo, *, case: str, mode: str) -> str:
    """The `conform run` command that runs this case in this mode alone, as the run did."""
    words = ["conform", "run"]
    words += ["--exec", info.target] if info.kind == "exec" else [info.target]
    try:
        shipped: Path | None = default_suite_root()
    except ConformError:
        shipped = None
    paths = list(info.suites or (info.suite,))
    if paths != [shipped]:
        for path in paths:
            words += ["--suite", ":shipped" if path == shipped else _from_here(path)]
    words += [*exact_args(case, paths), "--mode", mode]
    if info.seed != DEFAULT_SEED:
        words += ["--seed", str(info.seed)]
    words += info.rerun
    return shlex.join(words)


def _from_here(path: Path) -> str:
    """`path` as a user in the current folder can use it: relative when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) or "."
    except (ValueError, OSError):
        return str(path)


def shown_recording(info: RunInfo, result: CaseResult) -> str:
    """The recording's file as a path that exists from the current folder (its name's bytes
    shown as UTF-8, whatever the locale)."""
    return id_of_name(_from_here(info.recording_file(result)))


def pasted_command(info: RunInfo, *, case: str, mode: str) -> str:
    """`reproduce` as a command that works pasted into any shell: from the run's folder (a
    Python TARGET is imported from there, relative paths are read from there), with its
    PYTHONPATH, and without `--xfail` (which would hide the failure it reproduces)."""
    words = shlex.split(reproduce(info, case=case, mode=mode))
    if "--xfail" in words:
        at = words.index("--xfail")
        del words[at : at + 2]
    command = shlex.join(words)
    if info.pythonpath:
        command = f"PYTHONPATH={shlex.quote(info.pythonpath)} {command}"
    if info.cwd and _needs_folder(info, words):
        command = f"cd {shlex.quote(info.cwd)} && {command}"
    return command


def _needs_folder(info: RunInfo, words: Sequence[str]) -> bool:
    """True when the command depends on the folder it runs in: a TARGET that is a module name
    or a relative path, an --exec command, or a relative path among its words."""
    if info.kind == "exec":
        return True
    module = info.target.rpartition(":")[0]
    if not module.endswith(".py") or not Path(module).is_absolute():
        return True
    options_with_paths = {"--suite", "--xfail"}
    return any(
        before in options_with_paths and not Path(word).is_absolute() and word != ":shipped"
        for before, word in itertools.pairwise(words)
    )
