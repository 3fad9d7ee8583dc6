"""Run a user's program the way ``python SCRIPT`` / ``python -m MODULE`` would, under a watch.

What the program sees is what CPython gives it: ``__file__`` absolute (the path as given, joined
to the working directory), ``sys.argv[0]`` as given, the globals of ``python``'s ``__main__``, and
``sys.path[0]`` set as CPython sets it — the script's real directory, the folder or zip itself
for one run by its ``__main__.py``, the working directory for ``-m`` — in place of the launcher's
own entry, and nothing under ``-P`` or ``-I``. Exceptions are printed as Python prints them,
without torchport's and runpy's frames, and turn into the exit code Python would give (1,
SystemExit's code, 130 for Ctrl-C); a module that ``-m`` cannot find is Python's one line.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import io
import marshal
import os
import pkgutil
import runpy
import sys
import traceback
import types
from collections.abc import Iterator
from importlib.machinery import ModuleSpec, SourceFileLoader, SourcelessFileLoader
from typing import Any

from torchport.errors import EXIT_INTERRUPTED
from torchport.report.streams import flush, stderr_stream
from torchport.runtime.sites import _SKIPPED_DIRS, ignore_file
from torchport.runtime.watch import watch

_TORCHPORT_DIR = next(d for d in _SKIPPED_DIRS if d.rstrip(os.sep).endswith("torchport"))
_RUNPY = os.path.abspath(runpy.__file__)
_PYC_HEADER = 16  # magic, flags, and the source's mtime and size (or hash)


def main_module_missing(script: str) -> bool:
    """Whether ``script`` is a folder or zip file without the ``__main__`` Python would run."""
    finder = pkgutil.get_importer(_absolute(script))
    return finder is not None and _main_spec(finder) is None


def run_program(watcher: watch, module: str | None, program: list[str]) -> int:
    """Run ``program`` (SCRIPT ARGS, or ARGS when ``module`` is given) and return its exit code."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if saved_argv:
        ignore_file(saved_argv[0])  # the launcher sits below the program on every stack
    try:
        if module is not None:
            _run_module(watcher, module, program)
        else:
            _run_script(watcher, program)
    except SystemExit as exc:
        return _exit_code(exc)
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return EXIT_INTERRUPTED
    except BaseException as exc:  # noqa: BLE001 - the program's own error, shown as Python would
        if module is not None and _not_found_by_runpy(exc):
            _write_stderr(f"{sys.executable}: {exc}\n")
        else:
            _print_exception(exc)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def _run_module(watcher: watch, module: str, program: list[str]) -> None:
    sys.argv = ["-m", *program]  # what the module's parent packages see while it is looked up
    _set_path0(os.getcwd())
    with watcher:
        # alter_sys puts the module's file in sys.argv[0].
        runpy.run_module(module, init_globals=_main_globals(), run_name="__main__", alter_sys=True)


def _run_script(watcher: watch, program: list[str]) -> None:
    path = _absolute(program[0])
    sys.argv = list(program)
    finder = pkgutil.get_importer(path)
    if finder is None:
        _set_path0(os.path.dirname(os.path.realpath(path)))
        code, main = _script(path)
    else:
        _set_path0(path)  # a folder or zip file, as given (made absolute)
        code, main = _package_main(finder, path)
    with _as_main(main), watcher:
        exec(code, main.__dict__)


def _absolute(path: str) -> str:
    if os.name == "nt":
        return os.path.abspath(path)
    # CPython joins a relative script path to the working directory without normalising it.
    return os.path.join(os.getcwd(), path)


def _set_path0(entry: str) -> None:
    """Put ``entry`` where Python puts the program's own entry, in place of the launcher's."""
    if getattr(sys.flags, "safe_path", False) or sys.flags.isolated:
        return  # -P, -I or PYTHONSAFEPATH: python adds no entry, and added none for torchport
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)


def _script(path: str) -> tuple[types.CodeType, types.ModuleType]:
    with io.open_code(path) as stream:
        data = stream.read()
    loader: SourceFileLoader | SourcelessFileLoader
    if data[: len(importlib.util.MAGIC_NUMBER)] == importlib.util.MAGIC_NUMBER:
        code = marshal.loads(data[_PYC_HEADER:])
        loader = SourcelessFileLoader("__main__", path)
    else:
        # From bytes, so that a BOM or a coding declaration is honoured as python does.
        code = compile(data, path, "exec", dont_inherit=True)
        loader = SourceFileLoader("__main__", path)
    return code, _main_module(__file__=path, __cached__=None, __loader__=loader, __spec__=None)


def _main_spec(finder: Any) -> ModuleSpec | None:
    spec: ModuleSpec | None = finder.find_spec("__main__")
    return spec if spec is not None and spec.loader is not None else None


def _package_main(finder: Any, path: str) -> tuple[types.CodeType, types.ModuleType]:
    spec = _main_spec(finder)
    if spec is None:
        raise ImportError(f"can't find '__main__' module in {path!r}")
    code = spec.loader.get_code("__main__")  # type: ignore[union-attr]
    main = _main_module(
        __file__=spec.origin, __cached__=spec.cached, __loader__=spec.loader, __spec__=spec
    )
    main.__package__ = spec.parent
    return code, main


def _main_globals() -> dict[str, Any]:
    """The globals python's own ``__main__`` starts with, beyond those runpy and exec set."""
    start: dict[str, Any] = {"__builtins__": builtins}  # the module: exec alone gives its dict
    if "__annotations__" in vars(sys.modules["__main__"]):
        start["__annotations__"] = {}  # CPython creates __main__ with one (up to 3.13)
    return start


def _main_module(**values: Any) -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__dict__.update(_main_globals(), **values)
    return main


@contextlib.contextmanager
def _as_main(module: types.ModuleType) -> Iterator[None]:
    # sys.modules["__main__"] is the program while it runs: pickle and multiprocessing look there.
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
        else:
            del sys.modules["__main__"]


def _not_found_by_runpy(exc: BaseException) -> bool:
    """Whether runpy itself raised ``exc`` because it could not find or load the module."""
    if type(exc) is not ImportError or exc.__traceback__ is None:
        return False
    last = traceback.extract_tb(exc.__traceback__)[-1].filename
    return last in (_RUNPY, "<frozen runpy>")


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    _write_stderr(f"{exc.code}\n")
    return 1


def _write_stderr(text: str) -> None:
    # The program may have closed sys.stderr; python then still exits with its own code.
    with stderr_stream() as stream:
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.write(text)
                stream.flush()


def _print_exception(exc: BaseException) -> None:
    flush(sys.stdout)
    report = traceback.TracebackException.from_exception(exc)
    _trim(report, set())
    _write_stderr("".join(report.format()))


def _trim(report: traceback.TracebackException, seen: set[int]) -> None:
    """Drop torchport's and runpy's frames, in this exception and the ones it chains to."""
    if id(report) in seen:
        return
    seen.add(id(report))
    kept = [
        frame
        for frame in report.stack
        if not os.path.abspath(frame.filename).startswith(_TORCHPORT_DIR)
        and os.path.abspath(frame.filename) != _RUNPY
        and frame.filename != "<frozen runpy>"
    ]
    report.stack = traceback.StackSummary.from_list(kept)
    for chained in (report.__cause__, report.__context__):
        if chained is not None:
            _trim(chained, seen)
