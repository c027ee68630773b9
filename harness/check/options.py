"""What a run is asked to do, however it is asked: `conform run`, `conform matrix` (one per
target), `conform fuzz` and the pytest plugin build one `RunOptions` from their own options (as
toml-test's `Runner`), the rules of which options go together live here once, and the object is
passed whole: to the pipeline, the runner (`seed`, `level`, `required`), the drivers (`driver`,
the target and how it runs) and the reports (`label`, `rerun_args`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.check.modes import DEFAULT_SEED, MODES
from harness.check.results import FULL, LEVELS
from harness.drive.base import DEFAULT_TIMEOUT
from harness.drive.inprocess import Driver
from harness.drive.spec import NO_TARGET, DriverSpec
from harness.errors import ConformError
from harness.seconds import check_seconds
from reference.choices import OUTCOMES, REFERENCE


def unique_modes(modes: Sequence[str]) -> tuple[str, ...]:
    """The modes to run, each once, in the order given (every mode when none are);
    ConformError for a name that is not a mode."""
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise ConformError(f"{unknown[0]!r} is not a mode; the modes are {', '.join(MODES)}")
    return tuple(dict.fromkeys(modes)) or MODES


@dataclass(frozen=True)
class RunOptions:
    """The target, how it runs, what it is run over and how it is judged; ConformError when
    options conflict. Without a target (neither `target` nor `exec_command`) it judges cases run
    on a driver of the caller's own (`run_case`), and cannot start one."""

    target: str | None = None  # module:Class, module:factory or file.py:Class
    exec_command: str | None = None  # a program speaking the line protocol, instead of `target`
    in_process: bool = False
    timeout: float = DEFAULT_TIMEOUT  # seconds allowed for each call into a worker process
    validate_protocol: bool = False
    jobs: int = 1
    suite_dirs: tuple[Path, ...] = ()  # none: the suite shipped with conform
    modes: tuple[str, ...] = ()  # none: every mode
    seed: int = DEFAULT_SEED
    xfail_file: Path | None = None
    strict: bool = False  # the reference's own outcome at every implementation-defined point
    chosen_points: tuple[tuple[str, str], ...] = ()  # ("I3", "ignore"): that outcome required
    level: str = FULL  # the level of conformance judged: full, or completion
    name: str | None = None  # how reports name the target (default: its spec or command)
    #: The target and how it runs, as the driver layer takes it: made and checked once, here
    #: (None without a target).
    driver: DriverSpec | None = field(init=False, repr=False, compare=False)
    #: The outcomes required at implementation-defined points (None: any allowed one), from
    #: `strict` and `chosen_points`.
    required: dict[str, str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", check_seconds(self.timeout))
        spec = DriverSpec(
            self.target, self.exec_command, self.in_process, self.timeout, self.validate_protocol
        )
        given = self.target is not None or self.exec_command is not None
        object.__setattr__(self, "driver", spec.check() if given else None)
        if self.jobs > 1 and self.in_process:
            raise ConformError("-j runs worker processes; it does not go with --in-process")
        if self.level not in LEVELS:
            raise ConformError(f"{self.level!r} is not a level; the levels are {', '.join(LEVELS)}")
        unique_modes(self.modes)
        required = {p: getattr(REFERENCE, p) for p in OUTCOMES} if self.strict else {}
        required.update(dict(self.chosen_points))
        object.__setattr__(self, "required", required or None)

    @property
    def chosen_modes(self) -> tuple[str, ...]:
        """The modes to run, each once, in the order given (every mode when none was)."""
        return unique_modes(self.modes)

    @property
    def label(self) -> str:
        """The target as reports name it."""
        if self.name is not None:
            return self.name
        return self.driver.label if self.driver is not None else "(no target)"

    @property
    def kind(self) -> str:
        """`python` for a TARGET, `exec` for an --exec program."""
        return self.driver.kind if self.driver is not None else "python"

    def rerun_args(self) -> tuple[str, ...]:
        """The options besides the target, suites, cases, modes and seed that a command
        reproducing one of this run's results must repeat."""
        words: list[str] = []
        if self.in_process:
            words.append("--in-process")
        if self.timeout != DEFAULT_TIMEOUT:
            words += ["--timeout", f"{self.timeout:g}"]
        if self.strict:
            words.append("--strict")
        for point, outcome in self.chosen_points:
            words += ["--choose", f"{point}={outcome}"]
        if self.level != FULL:
            words += ["--level", self.level]
        if self.xfail_file is not None:
            words += ["--xfail", str(self.xfail_file)]
        return tuple(words)

    def start_driver(self) -> Driver:
        """A driver for the target, started (ConformError when it cannot start, or there is no
        target); the options were checked when these were made, so each `-j` worker only starts
        one."""
        if self.driver is None:
            raise ConformError(NO_TARGET)
        return self.driver.start()


#: The settings of a run that does not say: the default seed, the full level, any allowed outcome
#: (no target: it judges, and starts no driver).
DEFAULT_OPTIONS = RunOptions()
