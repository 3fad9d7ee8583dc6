"""Every ``.py`` file of the installed torch package through ``check``, ``check --fix
--unsafe-fixes`` (on a copy) and ``port --write`` (on a copy), as the release check of issue 15.

Prints, per command: files, findings, fixes or files changed, files skipped (TP100), seconds,
internal errors (must be 0), written files that do not parse (must be 0) and files a second
pass still changes (must be 0). ``--json`` prints the figures as one JSON object instead.

    OMP_NUM_THREADS=1 python benchmarks/torch_corpus.py [--limit N] [--jobs J] [--json]

Exit code 1 when any of the must-be-zero figures is not.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from torchport.analyze import runner
from torchport.config import Config
from torchport.port import PortOptions, PortResult
from torchport.port.files import internal_errors, port_file, write

CHECK = runner.Options(Config())
FIX = runner.Options(Config(), fix=True, unsafe=True)


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    return Path(spec.origin).parent


def corpus(root: Path, limit: int | None) -> list[Path]:
    """The package's .py files (an even sample of ``limit`` of them)."""
    files = sorted(root.rglob("*.py"))
    if limit is not None and limit < len(files):
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


def _check_one(path: Path, fix: bool) -> dict[str, Any]:
    """One file through check (or check --fix twice): counts, never an exception."""
    try:
        result = runner.check_file(path, FIX if fix else CHECK)
    except Exception as exc:  # noqa: BLE001 - the figure this script exists to count
        return {"internal": f"{path}: {type(exc).__name__}: {exc}"}
    out: dict[str, Any] = {
        "findings": len(result.findings),
        "fixes": len(result.applied),
        "skipped": int(any(f.code == "TP100" for f in result.findings)),
    }
    if fix and result.applied:
        out["unparsable"] = int(not _parses(path))
        again = runner.check_file(path, FIX)
        out["unstable"] = int(bool(again.applied))
    return out


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_bytes())
    except SyntaxError:
        return False
    return True


def run_check(files: list[Path], fix: bool, jobs: int) -> dict[str, Any]:
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(_check_one, files, [fix] * len(files), chunksize=16))
    figures = _sum(rows, ("findings", "fixes", "skipped", "unparsable", "unstable"))
    figures |= {"files": len(files), "seconds": round(time.perf_counter() - start, 1)}
    figures["internal errors"] = [r["internal"] for r in rows if "internal" in r]
    return figures


def _sum(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: sum(r.get(key, 0) for r in rows) for key in keys}


def run_port(root: Path, files: list[Path], jobs: int) -> dict[str, Any]:
    """``port --write`` over ``files``, each file alone, in ``jobs`` processes."""
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(_port_one, files, chunksize=4))
    written, problems = write(results, within=(root.resolve(),))
    unparsable = [p for p in written if not _parses(Path(p))]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        again = list(pool.map(_port_one, map(Path, written)))
    return {
        "files": len(files),
        "files changed": len(written),
        "notes": sum(len(r.notes) for r in results),
        "skipped": sum(1 for r in results if any(n.code == "TP100" for n in r.notes)),
        "seconds": round(time.perf_counter() - start, 1),
        "internal errors": [n.message for n in internal_errors(results)] + problems,
        "unparsable": len(unparsable),
        "unstable": sum(1 for r in again if r.changed),
    }


def _port_one(path: Path) -> PortResult:
    return port_file(path, PortOptions())


def _not_python(folder: str, names: list[str]) -> list[str]:
    """For copytree: keep folders and .py files only (torch's libraries are gigabytes)."""
    return [n for n in names if not n.endswith(".py") and not Path(folder, n).is_dir()]


def _print(command: str, row: dict[str, Any]) -> None:
    shown = {k: (len(v) if isinstance(v, list) else v) for k, v in row.items()}
    print(f"{command:28} " + ", ".join(f"{k}: {v}" for k, v in shown.items()), flush=True)
    for error in row["internal errors"]:
        print(f"    internal error: {error}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="an even sample of N files")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="check processes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--only", choices=("check", "fix", "port"), help="one command only")
    args = parser.parse_args()
    root = torch_root()
    stages = [args.only] if args.only else ["check", "fix", "port"]
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for stage in stages:
            tree = root
            if stage != "check":  # fixes and ports are written: on a copy
                tree = Path(scratch) / stage / "torch"
                shutil.copytree(root, tree, ignore=_not_python)
            files = corpus(tree, args.limit)
            if stage == "port":
                name, row = "port --write", run_port(tree, files, args.jobs)
            else:
                name = "check" if stage == "check" else "check --fix --unsafe-fixes"
                row = run_check(files, stage == "fix", args.jobs)
            figures[name] = row
            if not args.json:
                _print(name, row)
    if args.json:
        print(json.dumps(figures, indent=2))
    bad = any(
        row["internal errors"] or row.get("unparsable") or row.get("unstable")
        for row in figures.values()
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
