"""Run corpus programs in one interpreter (torch is imported once) and report their last lines.

Usage: python corpus_runner.py ROOT ENTRY... (also under torchrun: each program sets up
and tears down its own process group); ENTRY is a file under ROOT or ``-m:module``.
Prints one JSON object: entry -> {"last": last stdout line, "error": message or null}.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import traceback
from pathlib import Path


def run_one(root: Path, entry: str) -> dict[str, str | None]:
    for name in [m for m in sys.modules if m.split(".")[0] == "pkg_app"]:
        del sys.modules[name]
    out = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(out):
            if entry.startswith("-m:"):
                runpy.run_module(entry[3:], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(root / entry), run_name="__main__")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - report every program's failure
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        traceback.print_exc()
    lines = out.getvalue().strip().splitlines()
    return {"last": lines[-1] if lines else "", "error": error}


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(root))
    results = {entry: run_one(root, entry) for entry in sys.argv[2:]}
    # Under torchrun every rank runs this; rank 0 speaks for them (the others print errors).
    rank = os.environ.get("RANK", "0")
    if rank == "0":
        print(json.dumps(results))
    elif any(r["error"] for r in results.values()):
        print(json.dumps(results), file=sys.stderr)


if __name__ == "__main__":
    main()
