"""One description of how a target runs (`DriverSpec`), checked once and started as often as needed.

A run names its target once, as a Python `target` (`module:Class`, `file.py:Class`) or an
`exec_command` speaking the line protocol, with how it runs (`in_process`, `timeout`,
`validate_protocol`). `DriverSpec.check` holds the rules of which of these go together; `start`
makes a started `Driver` (each `-j` worker calls it once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.drive.base import DEFAULT_TIMEOUT, Driver
from harness.drive.batched import BatchedDriver
from harness.drive.forked import launcher, worker_command
from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.process import HELLO_TIME, ProcessDriver
from harness.errors import ConformError
from harness.seconds import check_seconds

#: What a run without a target, or with two, is told.
NO_TARGET = "give either TARGET or --exec 'COMMAND ARGS' (exactly one)"


@dataclass(frozen=True, slots=True)
class DriverSpec:
    """A target and how it runs; `check` raises ConformError when the options conflict."""

    target: str | None = None  # module:Class, module:factory or file.py:Class
    exec_command: str | None = None  # a program speaking the line protocol, instead of `target`
    in_process: bool = False
    timeout: float = DEFAULT_TIMEOUT  # seconds allowed for each call into the target
    validate_protocol: bool = False

    def check(self) -> DriverSpec:
        """This spec, when its options go together; ConformError naming the conflict otherwise
        (the timeout by the one rule of every time limit, `harness.seconds.check_seconds`)."""
        if (self.target is None) == (self.exec_command is None):
            raise ConformError(NO_TARGET)
        check_seconds(self.timeout)
        if self.in_process and self.exec_command is not None:
            raise ConformError("--in-process runs a Python TARGET; it does not go with --exec")
        if self.in_process and self.validate_protocol:
            raise ConformError("--validate-protocol checks a worker, not --in-process")
        return self

    @property
    def kind(self) -> Literal["python", "exec"]:
        """ "python" for a Python TARGET (in-process or in a worker), "exec" for a program."""
        return "exec" if self.exec_command is not None else "python"

    @property
    def label(self) -> str:
        """The target as reports name it."""
        return self.target if self.target is not None else str(self.exec_command)

    def start(self) -> Driver:
        """A driver for the target, started; ConformError (TargetError) when it cannot start.

        Call `check` first (once per run): `start` does not repeat it.
        """
        if self.in_process:
            return InProcessDriver(load_target(str(self.target)))
        if self.exec_command is not None:
            driver = ProcessDriver.from_command_line(
                self.exec_command, timeout=self.timeout, validate=self.validate_protocol
            )
        else:
            driver = python_target_driver(
                str(self.target), timeout=self.timeout, validate=self.validate_protocol
            )
        driver.start()
        return driver


def check_driver_options(
    target: str | None,
    exec_command: str | None,
    *,
    in_process: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    validate_protocol: bool = False,
) -> None:
    """ConformError for options that do not go together (`DriverSpec.check`)."""
    DriverSpec(target, exec_command, in_process, timeout, validate_protocol).check()


def start_driver(
    target: str | None,
    exec_command: str | None,
    *,
    in_process: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    validate_protocol: bool = False,
) -> Driver:
    """The driver for a Python TARGET or an --exec program, started (`DriverSpec.start`)."""
    return DriverSpec(target, exec_command, in_process, timeout, validate_protocol).check().start()


def python_target_driver(
    spec: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    validate: bool = False,
    max_memory: int | None = None,
) -> ProcessDriver:
    """A driver running the Python target `spec` in a worker process (`harness.adapter`), which
    also takes a whole pass in one request (`BatchedDriver`).

    The worker is this interpreter, in the current directory, with this process's `sys.path`;
    `max_memory` (MiB) overrides the adapter's default address-space limit.
    """
    command, env = worker_command(spec, max_memory=max_memory)
    # Inside a run, forked from a server that imported the target once (drive/forked.py).
    launch = launcher(time_allowed=max(timeout, HELLO_TIME))
    return BatchedDriver(
        command,
        timeout=timeout,
        validate=validate,
        env=env,
        label=spec,
        own_worker=True,
        launch=launch,
    )
