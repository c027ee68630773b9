"""Whose code a crash happened in: the client a target wraps, the adapter around it, or a target
that is its own implementation (docs/clients.md, "Whose fault a crash is").

Every frame of a crash's traceback belongs to one of:

- the **target's own code**: the file (or package) TARGET names, and the modules beside it;
- the **packages it wraps**: what the target module declares in `CONFORM_WRAPS` (a tuple of
  top-level package names, `("openai",)`; `()` says it wraps nothing), or else the third-party
  packages it imports that are clients of a server (their distribution depends, directly or
  through its own dependencies, on an HTTP library: httpx, requests, aiohttp, urllib3...; a
  JSON or validation library such as msgspec or pydantic is not a client);
- conform itself (its adapter kit counts as the adapter's code), the standard
  library, and other third-party packages.

The crash is placed at its innermost frame in the target's own code or in a package it wraps
(as Hypothesis tells failures apart: the exception's type and that file and line). In a wrapped
package it is the **client**'s; in the target's own code it is the **adapter**'s when the target
wraps a package (a bug of the wrapper, never blamed on the client), else the **target**'s (a
self-written assembler is its own implementation: its crashes are its bugs).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# `importlib.metadata`, `site` and `sysconfig` are imported when a crash is first placed: the
# worker imports this module, and must start without them (tests/worker/test_worker_start.py).

#: Whose code a crash happened in.
CLIENT, ADAPTER, TARGET = "client", "adapter", "target"
OWNERS = (CLIENT, ADAPTER, TARGET)
#: The attribute a target module (or its factory) declares the packages it wraps in.
WRAPS_ATTRIBUTE = "CONFORM_WRAPS"
#: What a package depends on, directly or not, to be a client of a server.
HTTP_LIBRARIES = frozenset(
    {"httpx", "httpx2", "requests", "aiohttp", "urllib3", "httpcore", "httpcore2", "pycurl"}
)

_HARNESS = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
_KIT = os.path.join(_HARNESS, "clients") + os.sep
_LINE = re.compile(r"^origin: (\S+) (\S+) (.+?):(\d+) in (.*)$")


@dataclass(frozen=True)
class Origin:
    """Where a crash happened: whose code, the exception's type, and the frame (a path below
    its package root or the current folder, and the line)."""

    owner: str  # CLIENT, ADAPTER or TARGET
    exception: str
    path: str
    line: int
    function: str
    package: str = ""  # the wrapped package, for a CLIENT crash

    @property
    def frame(self) -> str:
        """`openai/lib/streaming/chat/_completions.py:412`"""
        return f"{self.path}:{self.line}"

    def text(self) -> str:
        """The line a worker sends in its crash reply (`parse` reads it back)."""
        return f"origin: {self.owner} {self.exception} {self.path}:{self.line} in {self.function}"

    @classmethod
    def parse(cls, text: str) -> Origin | None:
        """The origin a line of `text` says, or None."""
        found = _LINE.match(text)
        if found is None or found.group(1) not in OWNERS:
            return None
        owner, exception, path, line, function = found.groups()
        package = path.split("/", 1)[0].removesuffix(".py") if owner == CLIENT else ""
        return cls(owner, exception, path, int(line), function, package)

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "exception": self.exception,
            "frame": self.frame,
            "function": self.function,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Origin | None:
        if not isinstance(doc, dict):
            return None
        path, _, line = str(doc.get("frame", "")).rpartition(":")
        return cls.parse(
            f"origin: {doc.get('owner')} {doc.get('exception')} {path}:{line or 0} "
            f"in {doc.get('function', '')}"
        )


def split_origin(details: str) -> tuple[Origin | None, str]:
    """The origin line a worker put before a crash's traceback (after the lines of a message
    that runs over several), and the details without it."""
    lines = details.split("\n")
    for at, line in enumerate(lines):
        origin = Origin.parse(line) if line.startswith("origin: ") else None
        if origin is not None:
            return origin, "\n".join(lines[:at] + lines[at + 1 :])
        if line.startswith("Traceback (most recent call last):"):
            break
    return None, details


@functools.cache
def _roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the standard library's folders, the folders third-party packages are installed in)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    stdlib = {paths.get("stdlib"), paths.get("platstdlib")}
    sites = {paths.get("purelib"), paths.get("platlib")}
    sites.update(getattr(site, "getsitepackages", lambda: [])())
    sites.add(getattr(site, "getusersitepackages", lambda: None)())
    sites.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    installed = tuple(sorted({os.path.realpath(p) + os.sep for p in sites if p}, key=len))
    libraries = tuple(os.path.realpath(p) + os.sep for p in stdlib if p)
    return libraries, installed[::-1]


@dataclass(frozen=True)
class TargetCode:
    """What code is a target's own, and which packages it wraps."""

    own: tuple[str, ...]  # folders (ending in os.sep) or files of the target's own code
    declared: tuple[str, ...] | None  # CONFORM_WRAPS, or None when the module declares none
    imported: tuple[str, ...]  # third-party top-level packages the target module imports

    @functools.cached_property
    def wraps(self) -> frozenset[str]:
        """The packages the target wraps: as declared, else the clients among its imports."""
        if self.declared is not None:
            return frozenset(self.declared)
        return frozenset(name for name in self.imported if _is_client(name))

    def _where(self, filename: str) -> tuple[str, str] | None:
        """(owner, shown path) of a frame's file, or None when it is no one's to blame."""
        path = os.path.realpath(filename)
        if path.startswith(_KIT):  # conform's adapter kit: the adapter's code
            return ADAPTER, "harness/" + path[len(_HARNESS) :].replace(os.sep, "/")
        if path.startswith(_HARNESS):
            return None
        libraries, installed = _roots()
        for root in installed:  # before the target's own folder, which may hold a venv
            if path.startswith(root):
                relative = path[len(root) :].replace(os.sep, "/")
                package = relative.split("/", 1)[0].removesuffix(".py")
                return (CLIENT, relative) if package in self.wraps else None
        if path.startswith(libraries):
            return None
        for own in self.own:
            if path == own or (own.endswith(os.sep) and path.startswith(own)):
                return (ADAPTER if self.wraps else TARGET), _shown(path)
        return None

    def origin(self, exc: BaseException) -> Origin | None:
        """Where `exc` happened: its innermost frame in the target's own code or in a package
        it wraps (None when it has none)."""
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            found = self._where(frame.filename)
            if found is not None:
                owner, path = found
                package = path.split("/", 1)[0].removesuffix(".py") if owner == CLIENT else ""
                return Origin(
                    owner, type(exc).__name__, path, frame.lineno or 0, frame.name, package
                )
        return None


def _shown(path: str) -> str:
    """`path` below the current folder when it is there, else as it is."""
    here = os.path.realpath(os.getcwd()) + os.sep
    return (path[len(here) :] if path.startswith(here) else path).replace(os.sep, "/")


def origin_of(exc: BaseException) -> Origin | None:
    """Where `exc`, raised by a call from conform into a target, happened: the target is the
    module of the first frame outside conform (its `push`, `finish` or factory)."""
    tb = exc.__traceback__
    while tb is not None:
        filename = os.path.realpath(tb.tb_frame.f_code.co_filename)
        if not filename.startswith(_HARNESS) or filename.startswith(_KIT):
            break
        tb = tb.tb_next
    if tb is None:
        return None
    frame = tb.tb_frame
    owner = frame.f_locals.get("self", None)
    name = frame.f_globals.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None:
        return None
    declared = getattr(type(owner), WRAPS_ATTRIBUTE, None) if owner is not None else None
    if declared is None:
        declared = getattr(module, WRAPS_ATTRIBUTE, None)
    try:
        return _code_of_module(module, _declared(declared)).origin(exc)
    except Exception:  # a look-up in the target's module or the installed packages: no blame
        return None


def code_of(obj: Any) -> TargetCode | None:
    """The `TargetCode` of the module that defines `obj` (an assembler, its class or factory)."""
    name = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None:
        return None
    declared = getattr(obj, WRAPS_ATTRIBUTE, None)
    if declared is None:
        declared = getattr(module, WRAPS_ATTRIBUTE, None)
    return _code_of_module(module, _declared(declared))


def _declared(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        return tuple(str(v) for v in value)
    return None


_CODES: dict[tuple[str, tuple[str, ...] | None], TargetCode] = {}


def _code_of_module(module: ModuleType, declared: tuple[str, ...] | None) -> TargetCode:
    key = (module.__name__, declared)
    found = _CODES.get(key)
    if found is None:
        found = _CODES[key] = TargetCode(_own_paths(module), declared, _imports(module))
    return found


def _own_paths(module: ModuleType) -> tuple[str, ...]:
    """The target's own code: its top-level package's folder, or a lone module's folder (the
    modules beside it are its own helpers)."""
    top = sys.modules.get(module.__name__.partition(".")[0], module)
    found = getattr(top, "__path__", None)
    if found:
        return tuple(os.path.realpath(p) + os.sep for p in found)
    file = getattr(module, "__file__", None)
    if not file:
        return ()
    return (os.path.dirname(os.path.realpath(file)) + os.sep,)


def _imports(module: ModuleType) -> tuple[str, ...]:
    """The third-party top-level packages `module` imports (modules, or names taken from them)."""
    _, installed = _roots()
    found: set[str] = set()
    for value in list(vars(module).values()):
        name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", "")
        if not isinstance(name, str) or not name:
            continue
        top = sys.modules.get(name.partition(".")[0])
        file = getattr(top, "__file__", None) or next(iter(getattr(top, "__path__", []) or []), "")
        if file and os.path.realpath(file).startswith(installed):
            found.add(name.partition(".")[0])
    return tuple(sorted(found))


@functools.cache
def _distributions() -> dict[str, list[str]]:
    from importlib import metadata

    return dict(metadata.packages_distributions())


#: conform's own packages: a target built on the reference wraps no client.
_CONFORMS = frozenset({"harness", "reference"})
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def _requires_http(distribution: str, depth: int = 4) -> bool:
    """True when `distribution` is an HTTP library or depends on one (up to `depth` levels)."""
    if _normal(distribution) in HTTP_LIBRARIES:
        return True
    if depth == 0:
        return False
    from importlib import metadata

    try:
        requires = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return False
    for requirement in requires:
        if "extra ==" in requirement.replace("extra==", "extra =="):
            continue
        found = _REQUIREMENT.match(requirement)
        if found and _requires_http(_normal(found.group(1)), depth - 1):
            return True
    return False


def _is_client(package: str) -> bool:
    """A third-party package that talks to a server: its distribution depends on an HTTP
    library (and is not one itself, nor conform's own)."""
    if _normal(package) in HTTP_LIBRARIES or package in _CONFORMS:
        return False
    return any(
        _normal(d) not in HTTP_LIBRARIES and _requires_http(d) for d in _distributions_of(package)
    )


def _distributions_of(package: str) -> list[str]:
    """The installed distributions that provide the top-level `package`: the one of its own
    name when there is one (at once), else from every distribution's files (slower)."""
    from importlib import metadata

    try:
        found = metadata.distribution(package)
    except (metadata.PackageNotFoundError, ValueError):
        return _distributions().get(package, [])
    return [found.metadata["Name"] or package]
