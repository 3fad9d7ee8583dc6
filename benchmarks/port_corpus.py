"""How `torchport port` does on the corpus (tests/corpus): one row per program.

    python benchmarks/port_corpus.py [--only NAME...] [--json]

Copies the corpus to a temporary folder, ports it with ``torchport port --write``, then, side
by side: runs the originals on the CPU, the ported copies on the CPU (on the GPU where there
is one), the ported copies under ``--simulate cuda`` (one report per program), and ``torchport
check`` on the ported copy. Per program: whether each run ended, whether the simulated result
agrees with the original's (the tolerance of tests/port), the device findings of the simulated
run, the CPU ops of its forward passes, ``check``'s errors, and the first failure with the
file:line it happened at. Uses the ``torchport`` next to this Python (the project's venv).
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "port"))

from corpus_runner import report_name  # noqa: E402
from port_support import (  # noqa: E402
    AWARE,
    CORPUS,
    PROGRAMS,
    RUNNER,
    TORCHPORT,
    errors_in,
    finish,
    halves,
    program_files,
    results_of,
    start,
)
from tolerances import ON_GPU, result_tolerance, simulated_tolerance  # noqa: E402

Row = dict[str, Any]
# Columns: edits (lines the port changed), orig/port/sim (ok: ran with the original's result,
# X: crashed, diff: another result), the two results, device findings of the simulated run,
# CPU ops in its forward passes, `check` errors in the port, and the first failure.


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="programs to run (a substring)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    return parser.parse_args()


def select(only: list[str] | None) -> list[str]:
    programs = PROGRAMS + AWARE
    if not only:
        return programs
    chosen = [p for p in programs if any(name in p for name in only)]
    if not chosen:
        print(f"port_corpus: no corpus program matches {' '.join(only)}", file=sys.stderr)
        sys.exit(2)
    return chosen


def port(root: Path) -> float:
    began = time.perf_counter()
    code, _, err = finish(start([str(TORCHPORT), "port", "--write", str(root)], root))
    if code not in (0, 1):
        sys.exit(f"port_corpus: torchport port exited {code}: {err.strip()[-2000:]}")
    return time.perf_counter() - began


def run_all(roots: dict[str, Path], programs: list[str]) -> tuple[dict[str, Any], list[Any]]:
    """Each group in two interpreters, all side by side, with `check` beside them."""
    reports = roots["simulated"] / "reports"
    reports.mkdir()
    options = {
        "original": [],
        "ported": [],
        "simulated": ["--simulate", "cuda", "--reports", str(reports)],
    }
    started = {
        group: [
            start([sys.executable, str(RUNNER), *extra, str(roots[group]), *part], roots[group])
            for part in halves(programs)
            if part
        ]
        for group, extra in options.items()
    }
    check = start(
        [str(TORCHPORT), "check", "--output-format", "json", "--exit-zero", "."], roots["ported"]
    )
    runs: dict[str, Any] = {group: {} for group in started}
    for group, processes in started.items():
        for process in processes:
            runs[group].update(results_of(process))
    code, out, err = finish(check)
    if code != 0:
        sys.exit(f"port_corpus: torchport check exited {code}: {err.strip()[-2000:]}")
    runs["reports"] = {p: json.loads((reports / report_name(p)).read_text()) for p in programs}
    return runs, json.loads(out)["findings"]


def copy_corpus(root: Path, programs: list[str]) -> None:
    """The files of ``programs`` only, so that a run with --only ports little."""
    for program in programs:
        for source in program_files(CORPUS, program):
            target = root / source.relative_to(CORPUS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def result(run: dict[str, Any]) -> float | None:
    last = run["last"] or ""
    if run["error"] is None and last.startswith("final loss "):
        return float(last.split()[-1])
    return None


def failure(run: dict[str, Any]) -> str:
    where = f"{run['where']}: " if run["where"] else ""
    crash = f"[torchport crash at {run['internal']}] " if run["internal"] else ""
    return f"{crash}{where}{(run['error'] or '').splitlines()[0]}"


def status(run: dict[str, Any], value: float | None, original: float | None, tol: Any) -> str:
    """ok: ran with the original's result; X: crashed; diff: ran, another result."""
    if run["error"] is not None:
        return "X"
    if value is None or original is None:
        return "diff"
    return "ok" if abs(value - original) <= max(tol.abs, tol.rel * abs(original)) else "diff"


def changed_lines(original: Path, ported: Path, program: str) -> int:
    count = 0
    for before in program_files(original, program):
        after = ported / before.relative_to(original)
        diff = difflib.unified_diff(before.read_text().splitlines(), after.read_text().splitlines())
        count += sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
    return count


def row(program: str, runs: dict[str, Any], findings: list[Any], roots: dict[str, Path]) -> Row:
    orig, port_run, sim = (runs[g][program] for g in ("original", "ported", "simulated"))
    report = runs["reports"][program]
    original, ported, simulated = result(orig), result(port_run), result(sim)
    status_sim = status(sim, simulated, original, simulated_tolerance(program))
    device = sorted(
        {
            f["code"]
            for f in report["findings"]
            if f["code"].startswith("TP1") or f["severity"] == "error"
        }
    )
    return {
        "program": program,
        "changed_lines": changed_lines(roots["original"], roots["ported"], program),
        "status": [
            "ok" if orig["error"] is None else "X",
            status(port_run, ported, original, result_tolerance(program, on_gpu=ON_GPU)),
            status_sim,
        ],
        "original": original,
        "ported": ported,
        "simulated": simulated,
        "device_findings": device,
        "forward_cpu_ops": report["facts"].get("ops_in_forward_by_device", {}).get("cpu", 0),
        "check_errors": len(errors_in(findings, roots["ported"], program)),
        "failure": next((failure(r) for r in (orig, port_run, sim) if r["error"]), ""),
    }


def print_table(rows: list[Row]) -> None:
    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.8f}"

    heads = ("edits orig port sim ", f"{'original':>11}", f"{'simulated':>11}", "device  ")
    print(f"{'program':34}", *heads, "fwdcpu chk  failure")
    for r in rows:
        ran = " ".join(f"{s:4}" for s in r["status"])
        device = ",".join(r["device_findings"]) or "-"
        numbers = f"{number(r['original']):>11} {number(r['simulated']):>11}"
        counts = f"{r['forward_cpu_ops']:6} {r['check_errors']:3}"
        print(
            f"{r['program']:34} {r['changed_lines']:5} {ran} {numbers} {device:8} {counts}  "
            f"{r['failure'][:100]}"
        )


def main() -> None:
    args = parse_args()
    programs = select(args.only)
    with tempfile.TemporaryDirectory(prefix="port_corpus_") as folder:
        base = Path(folder)
        roots = {name: base / name for name in ("original", "ported")}
        for root in roots.values():
            copy_corpus(root, programs)
        port_s = port(roots["ported"])
        roots["simulated"] = base / "simulated"
        shutil.copytree(roots["ported"], roots["simulated"])
        began = time.perf_counter()
        runs, findings = run_all(roots, programs)
        run_s = time.perf_counter() - began
        rows = [row(p, runs, findings, roots) for p in programs]
    good = [r for r in rows if r["status"][2] == "ok"]
    clean = sum(1 for r in good if not r["device_findings"] and not r["forward_cpu_ops"])
    summary = (
        f"{len(good)} of {len(rows)} ported programs run under --simulate cuda with the original's "
        f"result ({clean} of them with no device finding and no forward op on the CPU; "
        f"port {port_s:.1f} s, runs {run_s:.1f} s)"
    )
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
        return
    print_table(rows)
    print(summary)


if __name__ == "__main__":
    main()
