"""How a worker process prepares itself before its target is imported, shared by the worker
program (`harness.worker.program`) and its fork server (`harness.worker.forkserver`).

Both read the same command line (`TARGET [--max-memory MIB]`), keep the real stdin and stdout for
the protocol and point file descriptors 0 and 1 (and `sys.stdin`, `sys.stdout`) at /dev/null and
stderr, so what the target prints lands on stderr; and both limit their address space and enable
faulthandler. A forked worker is then prepared exactly as a started one.
"""

from __future__ import annotations

import faulthandler
import os
import sys
from typing import IO

from harness.drive.inprocess import split_spec

#: The worker's address-space limit (MiB) unless `--max-memory` says otherwise (0: none).
DEFAULT_MAX_MEMORY_MIB = 2048
#: The buffer of the protocol's stdin and stdout: large requests, few reads.
BUFFER = 1024 * 1024


def worker_arguments(args: list[str]) -> tuple[str, int] | None:
    """(TARGET, MIB) of `TARGET` or `TARGET --max-memory MIB` with a valid TARGET (the command
    line conform starts a worker with); None for any other (`--help`, a mistake)."""
    if len(args) == 1:
        target, limit = args[0], str(DEFAULT_MAX_MEMORY_MIB)
    elif len(args) == 3 and args[1] == "--max-memory":
        target, limit = args[0], args[2]
    else:
        return None
    if target.startswith("-") or not limit.isascii() or not limit.isdigit():
        return None
    try:
        split_spec(target)
    except ValueError:
        return None
    return target, int(limit)


def claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """The real stdin and stdout, for the protocol only; fds 0 and 1 then go elsewhere."""
    requests = os.fdopen(os.dup(0), "rb", buffering=BUFFER)  # large requests: few reads
    replies = os.fdopen(os.dup(1), "wb", buffering=BUFFER)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return requests, replies


def limit_memory(mebibytes: int) -> None:
    """Limit this process's address space to `mebibytes` MiB (0: no limit; not POSIX: none)."""
    if mebibytes <= 0:
        return
    try:
        import resource
    except ImportError:  # not POSIX: no limit
        return
    wanted = mebibytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def prepare_process(max_memory: int) -> None:
    """What a worker does before it imports its target, once its stdio is claimed."""
    faulthandler.enable()  # a segfault in the target leaves its traceback on stderr
    limit_memory(max_memory)
