"""Loading a target assembler and driving it one payload at a time.

A target is `module:attribute` or `path/to/file.py:attribute`, naming an assembler class or a
zero-argument factory (the current directory is importable). Driving it turns each call into a
golden-schema step; anything outside the contract (another exception, any `BaseException` but
`KeyboardInterrupt` included, a factory that gives None, a result that cannot be normalized)
becomes `TargetCrash`, carrying the exception and the last frames of its traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.drive.base import Driver
from harness.drive.blame import origin_of, split_origin
from harness.drive.limits import check_descriptors
from harness.drive.normalize import (
    SAID,
    NormalizeError,
    error_said,
    normalize_completion,
    normalize_error,
    normalize_events,
    read_state,
    text_of,
)
from harness.errors import TargetCrash, TargetError, TargetTimeout

__all__ = [
    "Driver",
    "Factory",
    "InProcessDriver",
    "TargetCrash",
    "TargetTimeout",
    "finish_step",
    "load_target",
    "new_assembler",
    "push_step",
    "split_spec",
]

Factory = Callable[[], Any]

_TRACEBACK_FRAMES = 4


def split_spec(spec: str) -> tuple[str, str]:
    """`module:attr` or `file.py:attr` into its two parts; ValueError when malformed."""
    module, colon, attribute = spec.rpartition(":")
    if not colon or not module or not attribute:
        raise ValueError("expected MODULE:ATTRIBUTE or path/to/file.py:ATTRIBUTE")
    if os.name == "nt" and len(module) == 1 and module.isalpha():  # a drive letter, no attribute
        raise ValueError("expected MODULE:ATTRIBUTE or path/to/file.py:ATTRIBUTE")
    return module, attribute


def _cwd_importable() -> None:
    """Put the current directory on `sys.path` (as `python -m` would), unless it is there."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise TargetError(f"no such file: {path}", hint="give the path of a .py file")
    name = f"_conform_target_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path}", hint="is it a Python source file?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    _cwd_importable()  # the file may import packages of the current directory, as README says
    sys.path.insert(0, str(path.resolve().parent))
    spec.loader.exec_module(module)
    return module


def _shadowed(name: str) -> str | None:
    """Where a module or package `name`'s top level stands in the current directory when an import
    of `name` would not load it (conform's own `reference` or `harness`, a module already
    imported, one found earlier on the path); None when the import would load it."""
    top = name.partition(".")[0]
    here = Path.cwd()
    local = [path for path in (here / f"{top}.py", here / top) if path.exists()]
    if not local or (local[0].is_dir() and not any(local[0].glob("*.py"))):
        return None
    module = sys.modules.get(top)
    if module is not None:
        origins = [getattr(module, "__file__", None), *getattr(module, "__path__", [])]
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        origins = [spec.origin, *(spec.submodule_search_locations or [])]
    for origin in origins:
        if origin and Path(origin).resolve().is_relative_to(here.resolve()):
            return None
    if _same_files(local[0], [Path(origin) for origin in origins if origin]):
        return None  # a copy of what the import loads: conform's own, in its own checkout
    return str(local[0].relative_to(here))


def _same_files(local: Path, origins: list[Path]) -> bool:
    """True when the module file or package folder `local` holds, byte for byte, the Python
    files of the module the import loads (`origins`: its file, or its package's folders), as
    conform's own `reference` does in the checkout it was installed from: importing either runs
    the same code, so nothing is shadowed. Any difference (a file edited since, another module
    of that name) is False."""
    try:
        if local.is_file():
            return any(o.is_file() and o.read_bytes() == local.read_bytes() for o in origins)
        mine = {p.relative_to(local): p.read_bytes() for p in local.rglob("*.py")}
        for folder in (o for o in origins if o.is_dir()):
            theirs = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.py")}
            if mine and theirs == mine:
                return True
    except OSError:
        return False
    return False


def _import_module(name: str) -> Any:
    _cwd_importable()
    shadowed = _shadowed(name)
    if shadowed is not None:
        file = f"{shadowed}/__init__.py" if not shadowed.endswith(".py") else shadowed
        raise TargetError(
            f"'{name}' would not import ./{shadowed} from the current folder but another module "
            f"of that name (conform's own, or one already imported)",
            hint=f"name the file instead, e.g. ./{file}:ATTRIBUTE, or rename your module",
        )
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(
                f"cannot import module '{name}'",
                hint="check the name; the current directory is importable, or give path/to/file.py",
            ) from None
        raise


def load_target(spec: str) -> Factory:
    """The factory that `spec` names; TargetError when it cannot be loaded."""
    try:
        module_name, attribute = split_spec(spec)
    except ValueError as exc:
        raise TargetError(f"bad target '{spec}': {exc}") from None
    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            module = _import_file(Path(module_name))
        else:
            module = _import_module(module_name)
    except TargetError:
        raise
    except Exception as exc:  # the target's own module failed while importing
        raise TargetError(
            f"importing '{module_name}' failed: {type(exc).__name__}: {exc}",
            hint="run 'python -c \"import " + module_name + "\"' to see the traceback"
            if not module_name.endswith(".py")
            else "run the file with python to see the traceback",
        ) from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise TargetError(
                f"'{module_name}' has no attribute '{attribute}'",
                hint="name an assembler class or a zero-argument factory",
            ) from None
    if not callable(found):
        raise TargetError(
            f"'{spec}' is a {type(found).__name__}, not a class or factory",
            hint="name an assembler class or a zero-argument factory",
        )
    factory: Factory = found
    return factory


_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_KIT_DIR = os.path.join(_HARNESS_DIR, "clients") + os.sep  # the adapter kit: the adapter's code


def _crash(exc: BaseException, doing: str, *, then: BaseException | None = None) -> TargetCrash:
    # Only the target's frames: not the harness's own calls into it (one, or more when a reader
    # in normalize.py calls a property of the target).
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(_HARNESS_DIR) or frame.filename.startswith(_KIT_DIR)
    ][-_TRACEBACK_FRAMES:]
    origin = origin_of(exc)
    lines = [] if origin is None else [origin.text() + "\n"]  # read back by `split_origin`
    lines += ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    lines += traceback.format_exception_only(type(exc), exc)
    message = f"{doing} raised {type(exc).__name__}: {text_of(exc)}"
    if then is not None:  # reading the exception itself raised: both are the target's
        message += f"; then reading it raised {type(then).__name__}: {text_of(then)}"
        lines += ["\n", split_origin(_crash(then, "reading it").details)[1], "\n"]
    return TargetCrash(message, details="".join(lines).rstrip())


def new_assembler(factory: Factory) -> Any:
    """A fresh assembler from the target's factory; TargetCrash when it raises or gives None."""
    try:
        assembler = factory()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _crash(exc, "creating the assembler") from None
    if assembler is None:
        raise TargetCrash("creating the assembler returned None, not an assembler")
    return assembler


def error_step(exc: BaseException, doing: str, *, say: bool) -> dict[str, Any]:
    """`{"error": ...}` for an exception of the contract's kinds (with the target's words under
    `SAID` when `say`); TargetCrash for any other."""
    try:
        error = normalize_error(exc)
        said = error_said(exc, error["kind"]) if say and error is not None else ""
    except KeyboardInterrupt:
        raise
    except BaseException as inner:  # a `kind` or `message` property of the target's that raises
        raise _crash(exc, doing, then=inner) from None
    if error is None:
        raise _crash(exc, doing) from None
    return {"error": error, SAID: said} if say else {"error": error}


def push_step(assembler: Any, data: str, line: int, *, say: bool = False) -> dict[str, Any]:
    """Push one payload; the golden step it makes (`events` and `state`, or `error`).

    With `say`, an error step also carries the target's own words under `SAID`.
    """
    try:
        events = assembler.push(data)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # GeneratorExit or the target's own BaseException: a crash too
        return {"line": line, **error_step(exc, "push", say=say)}
    return step_of(assembler, events, line)


def step_of(assembler: Any, events: Any, line: int) -> dict[str, Any]:
    """The step of a push that returned `events` (TargetCrash when they cannot be read)."""
    try:
        normalized = normalize_events(events)
    except NormalizeError as exc:
        raise TargetCrash(f"push returned something conform cannot read: {exc}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a property of an event that raises
        raise _crash(exc, "reading the events push returned") from None
    return {"line": line, "events": normalized, "state": _state_of(assembler)}


def _state_of(assembler: Any) -> dict[str, Any]:
    """`read_state`, its failures as TargetCrash."""
    return _checked(read_state, assembler)


def _checked(read: Callable[..., dict[str, Any]], assembler: Any, *args: Any) -> dict[str, Any]:
    """`read(assembler, *args)`: a state reader, its failures as TargetCrash."""
    try:
        return read(assembler, *args)
    except NormalizeError as exc:
        raise TargetCrash(f"the state after push is something conform cannot read: {exc}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a state reader that raises
        raise _crash(exc, "reading the state") from None


def finish_step(assembler: Any, thinking_capped: bool, *, say: bool = False) -> dict[str, Any]:
    """Call `finish`; the golden `finish` object (`completion` or `error`; `say` as in
    `push_step`)."""
    try:
        completion = assembler.finish(thinking_capped)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # GeneratorExit or the target's own BaseException: a crash too
        return error_step(exc, "finish", say=say)
    try:
        return {"completion": normalize_completion(completion)}
    except NormalizeError as exc:
        raise TargetCrash(f"finish returned something conform cannot read: {exc}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a property of the completion that raises
        raise _crash(exc, "reading the completion") from None


class InProcessDriver:
    """Drives a Python target in this process (fast, but shares the harness's fate)."""

    def __init__(self, factory: Factory) -> None:
        self._factory = factory
        self._assembler: Any = None

    def start_case(self) -> None:
        check_descriptors()  # a target that leaks them fails here, naming the limit
        self._assembler = new_assembler(self._factory)

    def push(self, data: str, line: int) -> dict[str, Any]:
        return push_step(self._assembler, data, line, say=True)

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        return finish_step(self._assembler, thinking_capped, say=True)

    def case_stderr(self) -> str:
        """Nothing: a target in this process shares the harness's stderr, which is not captured."""
        return ""

    def close(self) -> None:
        self._assembler = None
