"""Recall and false alarms of `check` and `run --simulate cuda` on the project's bug corpus.

The corpus is tests/detection/cases: `bugs/` holds small programs modelled on public bug
reports, each marking the line(s) where a tool should report the bug with a trailing comment,
and `clean/` holds their correct twins, where nothing at error or warning level may be reported.

    # expect: TP103            a finding with this code on this line finds the bug
    # expect: TP102, TP150     any of these codes
    # expect: any              any finding on this line
    # expect[mask]: TP103      lines sharing a label are one bug: a finding on any of them finds it

A bug counts as found by a tool in "code" mode when the tool reports one of the listed codes on
one of its lines, and in "line" mode when the tool reports anything there (any severity). A
finding reports on its own line and on its related lines in the same file (where it says the
offending value was made); `--at-line-only` counts only its own line.
False alarms are error and warning findings: on clean programs, and on buggy programs at lines
that no expectation names (these may be real second problems; they are listed for a human).

    OMP_NUM_THREADS=1 python benchmarks/detection_score.py [--tool check|run|both] [--only TEXT]
        [--json] [--jobs N] [--timeout S] [--verbose] [--cases DIR] [--at-line-only]
        [--real-device]

`--cases DIR` scores a corpus in the same layout kept outside the project (a held-out set).
`--real-device` runs plain `torchport run` instead of `run --simulate cuda`: on a GPU machine the
programs then run on the GPU, which measures `run` as a user with a GPU meets it.

`check` runs once over the whole corpus (one process, JSON output); `run --simulate cuda` runs
each program in its own process, several at a time, each with a time limit.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import tokenize
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "detection" / "cases"
SIMULATE = ["--simulate", "cuda"]
AREAS = ("device placement", "transfer & sync", "dtype", "AMP", "porting & distributed")
ANY = "any"
_EXPECT = re.compile(r"#\s*expect(?:\[(?P<group>[\w-]+)\])?\s*:\s*(?P<codes>.+?)\s*$")
_CODE = re.compile(r"^(TP\d{3}|any)$")
_HEADER = re.compile(r"^#\s*(?P<key>source|area|bug|twin of|correct)\s*:\s*(?P<value>.+?)\s*$")
LOUD = ("error", "warning")


class CorpusError(ValueError):
    """A case file whose header or expectations do not parse."""


@dataclass
class Bug:
    """One expected finding: the lines (and codes per line) where a tool may report it."""

    case: str
    label: str
    lines: dict[int, frozenset[str]]

    def found(self, findings: Iterable[Finding], by_code: bool, own_line: bool = False) -> bool:
        for f in findings:
            for line in f.lines(own_line):
                codes = self.lines.get(line)
                if codes is not None and (not by_code or ANY in codes or f.code in codes):
                    return True
        return False


@dataclass
class Case:
    path: Path
    name: str  # bugs/xxx.py or clean/xxx.py
    area: str
    clean: bool
    bugs: list[Bug] = field(default_factory=list)

    @property
    def expected_lines(self) -> set[int]:
        return {line for bug in self.bugs for line in bug.lines}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    line: int
    message: str = ""
    related: tuple[int, ...] = ()  # lines of the same file the finding points at

    def lines(self, own_line: bool = False) -> tuple[int, ...]:
        """The lines it reports on: its own, and (unless ``own_line``) its related ones."""
        return (self.line,) if own_line else (self.line, *self.related)


@dataclass
class RunOutcome:
    findings: list[Finding]
    problem: str | None = None  # timed out, no report, or torchport's own error


def parse_case(path: Path) -> Case:
    """The header and expectations of one case file (CorpusError when malformed)."""
    text = path.read_text(encoding="utf-8")
    name = f"{path.parent.name}/{path.name}"
    clean = path.parent.name == "clean"
    header = {}
    for raw in text.splitlines():
        if not raw.startswith("#"):
            break
        match = _HEADER.match(raw)
        if match:
            header[match.group("key")] = match.group("value")
    area = header.get("area", "")
    if area not in AREAS:
        raise CorpusError(f"{name}: header needs `# area:` one of {', '.join(AREAS)}")
    needed = ("twin of", "correct") if clean else ("source", "bug")
    for key in needed:
        if key not in header:
            raise CorpusError(f"{name}: header needs `# {key}:`")
    case = Case(path, name, area, clean)
    groups: dict[str, dict[int, frozenset[str]]] = {}
    for line, comment in _comments(text, name):
        match = _EXPECT.match(comment)
        if match is None:
            if re.match(r"#\s*expect\b", comment):
                raise CorpusError(f"{name}:{line}: malformed expectation {comment!r}")
            continue
        codes = frozenset(c.strip() for c in match.group("codes").split(","))
        bad = [c for c in codes if not _CODE.match(c)]
        if bad:
            raise CorpusError(f"{name}:{line}: unknown codes {bad} (TPnnn or `any`)")
        label = match.group("group") or f"line {line}"
        groups.setdefault(label, {})[line] = codes
    case.bugs = [Bug(name, label, lines) for label, lines in groups.items()]
    if clean and case.bugs:
        raise CorpusError(f"{name}: a clean twin expects nothing")
    if not clean and not case.bugs:
        raise CorpusError(f"{name}: a buggy case needs at least one `# expect:` line")
    return case


def _comments(text: str, name: str) -> list[tuple[int, str]]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise CorpusError(f"{name}: does not tokenize: {exc}") from exc
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]


def load_cases(only: str | None = None, folder: Path = CASES) -> list[Case]:
    """The cases under ``folder`` (its ``bugs/`` and ``clean/``), those named ``only`` if given."""
    if not (folder / "bugs").is_dir():
        raise CorpusError(f"{folder}: no bugs/ folder of cases there")
    files = sorted([*folder.glob("bugs/*.py"), *folder.glob("clean/*.py")])
    cases = [parse_case(p) for p in files]
    return [c for c in cases if only is None or only in c.name]


# -- the tools ----------------------------------------------------------------------------


def _python() -> list[str]:
    return [sys.executable, "-m", "torchport"]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def _findings(report: dict[str, Any], base: Path) -> dict[Path, list[Finding]]:
    out: dict[Path, list[Finding]] = defaultdict(list)
    for f in report.get("findings", []):
        if f.get("path") is None or f.get("line") is None:
            continue
        path = (base / f["path"]).resolve()
        related = tuple(
            r["line"] for r in f.get("related", []) if (base / r["path"]).resolve() == path
        )
        message = f.get("message", "")
        out[path].append(Finding(f["code"], f["severity"], f["line"], message, related))
    return out


def run_check(cases: list[Case]) -> dict[str, list[Finding]]:
    """`torchport check` once over every case file (JSON); findings by case name."""
    command = [*_python(), "check", "--output-format", "json", "--exit-zero", "--no-gitignore"]
    command += [str(c.path) for c in cases]
    done = subprocess.run(
        command, capture_output=True, text=True, env=_env(), cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"torchport check failed ({done.returncode}): {done.stderr[-2000:]}")
    by_path = _findings(json.loads(done.stdout), ROOT)
    return {c.name: by_path.get(c.path.resolve(), []) for c in cases}


def run_one(case: Case, timeout: float, simulate: bool = True) -> RunOutcome:
    """`torchport run --simulate cuda` (or plain `run`) on one case, in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="tp-score-") as scratch:
        report = Path(scratch) / "report.json"
        command = [*_python(), "run", *SIMULATE * simulate, "--output-format", "json"]
        command += ["--report", str(report), str(case.path)]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env=_env(), cwd=scratch,
                timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return RunOutcome([], f"timed out after {timeout:.0f} s")
        if not report.exists():
            return RunOutcome([], f"no report (exit {done.returncode}): {done.stderr[-300:]}")
        by_path = _findings(json.loads(report.read_text(encoding="utf-8")), Path(scratch))
        problem = None
        if "internal error" in done.stderr.lower():
            problem = "torchport reported an internal error: " + done.stderr[-300:]
        return RunOutcome(by_path.get(case.path.resolve(), []), problem)


def run_all(
    cases: list[Case], jobs: int, timeout: float, simulate: bool = True
) -> dict[str, RunOutcome]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        outcomes = pool.map(lambda c: run_one(c, timeout, simulate), cases)
        return {c.name: o for c, o in zip(cases, outcomes, strict=True)}


# -- scoring ------------------------------------------------------------------------------


@dataclass
class Score:
    """Found bugs per tool ("check", "run", "both") and mode ("code", "line")."""

    found: dict[tuple[str, str], list[Bug]] = field(default_factory=lambda: defaultdict(list))
    bugs: list[Bug] = field(default_factory=list)


def score(
    cases: list[Case], results: dict[str, dict[str, list[Finding]]], own_line: bool = False
) -> tuple[dict[str, Score], dict[str, Any]]:
    """Per area (and "all") which bugs each tool finds; the false alarms of each tool.

    With ``own_line``, a finding counts only on its own line, not on its related ones."""
    areas: dict[str, Score] = defaultdict(Score)
    alarms: dict[str, Any] = {tool: {"clean": [], "buggy_unexpected": []} for tool in results}
    for case in cases:
        per_tool = {tool: found.get(case.name, []) for tool, found in results.items()}
        for tool, findings in per_tool.items():
            loud = [f for f in findings if f.severity in LOUD]
            if case.clean:
                alarms[tool]["clean"] += [(case.name, f) for f in loud]
            else:
                expected = case.expected_lines
                alarms[tool]["buggy_unexpected"] += [
                    (case.name, f) for f in loud if expected.isdisjoint(f.lines(own_line))
                ]
        for bug in case.bugs:
            for area in (case.area, "all"):
                areas[area].bugs.append(bug)
                for mode in ("code", "line"):
                    hits = {t: bug.found(f, mode == "code", own_line) for t, f in per_tool.items()}
                    for tool, hit in hits.items():
                        if hit:
                            areas[area].found[(tool, mode)].append(bug)
                    if len(hits) > 1 and any(hits.values()):
                        areas[area].found[("both", mode)].append(bug)
    return areas, alarms


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} % ({part}/{whole})" if whole else "   n/a"


def report_text(
    areas: dict[str, Score], alarms: dict[str, Any], tools: list[str], problems: dict[str, str]
) -> str:
    columns = [*tools, "both"] if len(tools) > 1 else tools
    out = []
    for mode, title in (("code", "code must match"), ("line", "any finding on the line")):
        out.append(f"recall ({title}):")
        head = "  area".ljust(26) + "".join(t.ljust(22) for t in columns)
        out.append(head)
        for area in (*AREAS, "all"):
            s = areas.get(area)
            if s is None:
                continue
            row = f"  {area}".ljust(26)
            row += "".join(_pct(len(s.found[(t, mode)]), len(s.bugs)).ljust(22) for t in columns)
            out.append(row)
        out.append("")
    out.append("false alarms (error/warning findings):")
    for tool in tools:
        clean, buggy = alarms[tool]["clean"], alarms[tool]["buggy_unexpected"]
        out.append(f"  {tool}: {len(clean)} on clean twins, {len(buggy)} on buggy cases at "
                   "lines no expectation names")  # fmt: skip
    if problems:
        out.append("")
        out.append(f"run problems ({len(problems)}):")
        out += [f"  {name}: {why}" for name, why in sorted(problems.items())]
    return "\n".join(out)


def details(
    cases: list[Case], areas: dict[str, Score], alarms: dict[str, Any], tools: list[str]
) -> str:
    out = []
    everything = areas["all"]
    columns = [*tools, "both"] if len(tools) > 1 else tools
    for tool in columns:
        found = {id(b) for b in everything.found[(tool, "code")]}
        missed = [b for b in everything.bugs if id(b) not in found]
        out.append(f"missed by {tool} (code mode): {len(missed)}")
        out += [f"  {b.case} [{b.label}] lines {sorted(b.lines)}" for b in missed]
    for tool in tools:
        for kind in ("clean", "buggy_unexpected"):
            items = alarms[tool][kind]
            out.append(f"{tool} false alarms, {kind}: {len(items)}")
            out += [f"  {name}:{f.line} {f.code} {f.message[:90]}" for name, f in items]
    return "\n".join(out)


def as_json(
    areas: dict[str, Score], alarms: dict[str, Any], tools: list[str], problems: dict[str, str]
) -> dict[str, Any]:
    columns = [*tools, "both"] if len(tools) > 1 else tools
    recall = {
        mode: {
            area: {t: {"found": len(s.found[(t, mode)]), "total": len(s.bugs)} for t in columns}
            for area, s in areas.items()
        }
        for mode in ("code", "line")
    }
    false_alarms = {
        tool: {
            kind: [{"case": n, "line": f.line, "code": f.code} for n, f in items]
            for kind, items in alarms[tool].items()
        }
        for tool in tools
    }
    return {"recall": recall, "false_alarms": false_alarms, "run_problems": problems}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=("check", "run", "both"), default="both")
    parser.add_argument("--only", help="score only cases whose name contains this text")
    parser.add_argument(
        "--cases", type=Path, default=CASES, metavar="DIR",
        help="a corpus in the same layout kept elsewhere (DIR/bugs, DIR/clean)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per `run`")
    parser.add_argument("--verbose", action="store_true", help="list misses and false alarms")
    parser.add_argument(
        "--at-line-only", action="store_true",
        help="count a finding only on its own line, not where it says the value was made",
    )  # fmt: skip
    parser.add_argument(
        "--real-device", action="store_true",
        help="plain `run`, without --simulate cuda: on a GPU machine, the programs use the GPU",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        cases = load_cases(args.only, args.cases.resolve())
    except CorpusError as exc:
        print(f"detection_score: {exc}", file=sys.stderr)
        return 2
    if not cases:
        print("detection_score: no case matches", file=sys.stderr)
        return 2
    tools = ["check", "run"] if args.tool == "both" else [args.tool]
    results: dict[str, dict[str, list[Finding]]] = {}
    problems: dict[str, str] = {}
    if "check" in tools:
        results["check"] = run_check(cases)
    if "run" in tools:
        outcomes = run_all(cases, args.jobs, args.timeout, not args.real_device)
        results["run"] = {name: o.findings for name, o in outcomes.items()}
        problems = {name: o.problem for name, o in outcomes.items() if o.problem}
    areas, alarms = score(cases, results, args.at_line_only)
    if args.json:
        print(json.dumps(as_json(areas, alarms, tools, problems), indent=2))
    else:
        print(report_text(areas, alarms, tools, problems))
        if args.verbose:
            print()
            print(details(cases, areas, alarms, tools))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
