"""Run corpus programs in one interpreter (torch is imported once) and report how each ended.

Usage: python corpus_runner.py [--simulate DEVICE --reports DIR] ROOT ENTRY...
(also under torchrun: each program sets up and tears down its own process group). ENTRY is
a file under ROOT (``aware/x.py``) or ``-m:package.module``; each runs as ``python ENTRY``
would, with ``sys.argv`` set to it alone, from the current directory (ROOT, for the tests).

Prints one JSON object: entry -> {"last": last stdout line, "error": message or null,
"where": "file:line" of the crash in the program's own code or null, "internal":
"file:line" when the innermost frame of the crash is torchport's own code, else null}.

With ``--simulate DEVICE`` each program runs inside its own ``torchport.watch(DEVICE)``,
the observer ``torchport run --simulate DEVICE`` installs, and its report is written to
``DIR/<entry>.json`` in the format of ``torchport run --output-format json --report FILE``:
one report per program, where one ``torchport run`` over this runner would pool them all.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import runpy
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

Result = dict[str, str | None]


def report_name(entry: str) -> str:
    """The file name of an entry's report: ``aware/x.py`` -> ``aware__x.py.json``."""
    return entry.replace("/", "__").replace(":", "_") + ".json"


def _forget_packages(root: Path) -> None:
    """Drop the corpus packages from ``sys.modules`` so each -m entry imports them afresh."""
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    for name in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[name]


@contextlib.contextmanager
def _program_state(root: Path, entry: str) -> Iterator[None]:
    """sys.argv, sys.path and cwd as ``python ENTRY`` sets them; torch's global modes (default
    dtype, grad mode, cuDNN flags) restored for the next program."""
    saved = sys.argv[:], sys.path[:], os.getcwd()
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    cudnn = torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic
    if entry.startswith("-m:"):
        sys.argv = [entry[3:]]
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = [str(root / entry)]
        sys.path.insert(0, str((root / entry).parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        os.chdir(saved[2])
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = cudnn


def _crash_sites(exc: BaseException, root: Path) -> tuple[str | None, str | None]:
    """Where the crash happened in the program's files, and in torchport if it ended there."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = None
    for frame in frames:
        path = Path(frame.filename).resolve()
        if path.is_relative_to(root):
            where = f"{path.relative_to(root)}:{frame.lineno}"
    internal = None
    torchport_dir = _torchport_dir()
    # The simulated device raises torch's own RuntimeErrors (a device mismatch) from
    # torchport's frames by design; any other exception that ends there is torchport's crash.
    if frames and torchport_dir is not None and not isinstance(exc, RuntimeError):
        last = Path(frames[-1].filename).resolve()
        if last.is_relative_to(torchport_dir):
            internal = f"torchport/{last.relative_to(torchport_dir)}:{frames[-1].lineno}"
    return where, internal


def _torchport_dir() -> Path | None:
    try:
        import torchport
    except ImportError:
        return None
    return Path(torchport.__file__).resolve().parent


def _execute(root: Path, entry: str) -> None:
    if entry.startswith("-m:"):
        runpy.run_module(entry[3:], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(str(root / entry), run_name="__main__")


def run_one(root: Path, entry: str, simulate: str | None, reports: Path | None) -> Result:
    _forget_packages(root)
    out = io.StringIO()
    error = where = internal = None
    watcher: Any = None
    try:
        with _program_state(root, entry), contextlib.redirect_stdout(out):
            if simulate is None:
                _execute(root, entry)
            else:
                from torchport.runtime import watch

                watcher = watch(simulate)
                with watcher:
                    _execute(root, entry)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - report every program's failure
        if not (isinstance(exc, SystemExit) and exc.code in (0, None)):
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            where, internal = _crash_sites(exc, root)
            traceback.print_exc()
    if watcher is not None and reports is not None:
        from torchport.report import render

        with open(reports / report_name(entry), "w", encoding="utf-8") as stream:
            render(watcher.report(), "json", stream)
    lines = out.getvalue().strip().splitlines()
    return {
        "last": lines[-1] if lines else "",
        "error": error,
        "where": where,
        "internal": internal,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--simulate", metavar="DEVICE")
    parser.add_argument("--reports", metavar="DIR", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("entries", nargs=argparse.REMAINDER)  # "-m:..." is no option
    args = parser.parse_args()
    root = args.root.resolve()
    if args.simulate is not None:
        from torchport.runtime.sites import ignore_file

        ignore_file(__file__)  # the runner sits below every program on the stack
        ignore_file(os.path.abspath(__file__))
    results = {e: run_one(root, e, args.simulate, args.reports) for e in args.entries}
    # Under torchrun every rank runs this; rank 0 speaks for them (the others print errors).
    rank = os.environ.get("RANK", "0")
    if rank == "0":
        print(json.dumps(results))
    elif any(r["error"] for r in results.values()):
        print(json.dumps(results), file=sys.stderr)


if __name__ == "__main__":
    main()
