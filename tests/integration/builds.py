"""The example programs, built once: a cache keyed on everything a build reads.

A build is kept in `~/.cache/conform/builds/<name>-<key>/` (or under `$XDG_CACHE_HOME`), where the
key hashes the example's source files, the toolchain's version and the build's own arguments. A
changed source, compiler or feature is a new key, so a stale binary is never run; an unchanged
one is not rebuilt by the next test session, nor by the other xdist workers of this one (a lock
file makes them wait for the first builder, and the binary appears by one atomic rename).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conform" / "builds"


def tool_version(*command: str) -> str:
    """What `command` prints (a toolchain's version line), part of a build's key."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:  # not installed: the build itself will say so
        return f"{command[0]}: {exc}"
    return done.stdout + done.stderr


def source_key(folder: Path, *extra: str, skip: Iterable[str] = ("target",)) -> str:
    """A hash of every file below `folder` (path and bytes; folders named in `skip` left out) and
    of `extra` (toolchain versions, build arguments)."""
    digest = hashlib.sha256()
    skipped = set(skip)
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if skipped.intersection(relative.parts) or not path.is_file():
            continue
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for part in extra:
        digest.update(b"\1" + part.encode())
    return digest.hexdigest()[:16]


def cached_build(name: str, key: str, make: Callable[[Path], None]) -> Path:
    """The file `name` built for `key`: `make(path)` writes it to `path` when it is not cached."""
    folder = CACHE / f"{name}-{key}"
    artifact = folder / name
    if artifact.is_file():
        return artifact
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it: wait for it
        if not artifact.is_file():
            partial = folder / f".{name}.{os.getpid()}"
            make(partial)
            os.replace(partial, artifact)
    return artifact
