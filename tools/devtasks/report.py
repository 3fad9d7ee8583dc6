"""The report of ``dev.py gpu``: one JSON file with everything, one Markdown file to read."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from devtasks.steps import Result

SCHEMA = 1


def as_json(context: dict[str, Any], results: list[Result]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        **context,
        "passed": all(r.passed for r in results),
        "steps": [dataclasses.asdict(r) for r in results],
    }


def _summary(result: Result) -> str:
    figures = result.figures
    if "passed" in figures and "failed" in figures:
        counts = (figures["passed"], figures["failed"], figures["skipped"])
        return "{} passed, {} failed, {} skipped".format(*counts)
    if "verdict" in figures:
        return str(figures["verdict"])
    if "ceiling_gb_per_s" in figures:
        return ", ".join(f"{d} {gbps:.1f} GB/s" for d, gbps in figures["ceiling_gb_per_s"].items())
    if "worst_deviceloader_share" in figures:
        share, idle = figures["worst_deviceloader_share"], figures["worst_deviceloader_excess_idle"]
        text = f"worst DeviceLoader share of bound {100 * share:.1f} %"
        return text if idle is None else f"{text}, worst excess GPU idle {100 * idle:.1f} %"
    return ""


def _loader_section(figures: dict[str, Any]) -> list[str]:
    table = figures["share_of_bound"]
    modes = list(dict.fromkeys(m for regime in table.values() for m in regime))
    lines = ["| regime | " + " | ".join(modes) + " |", "| --- " * (len(modes) + 1) + "|"]
    for regime, shares in table.items():
        cells = [f"{100 * shares[m]:.1f} %" if m in shares else "-" for m in modes]
        lines.append(f"| {regime} | " + " | ".join(cells) + " |")
    lines.append("")
    for regime in figures["regimes"]:
        lines.append(
            f"- {regime['regime']}: the step took {regime['achieved_ratio']:.2f} x the copy "
            f"({regime['model_iters']} products); idle the bound leaves: "
            f"{100 * regime['unavoidable_idle_share']:.1f} %"
        )
    memory = figures["memory"]
    if memory.get("not_measured"):
        why = memory["not_measured"]
        lines.append(f"- device memory per prefetch slot and drift: not measured ({why})")
    else:
        lines.append(
            f"- extra device memory per prefetch slot: {memory['extra_mib_per_prefetch_slot']} "
            f"MiB; reserved-memory drift over {memory['drift_steps']} steps: "
            f"{memory['reserved_drift_mib']} MiB"
        )
    goal = figures["goal_met"]
    lines.append(
        "- goal (>= 95 % of the bound at every depth, excess GPU idle <= 5 %) met: "
        + ("not measured (needs CUDA)" if goal is None else ("yes" if goal else "**no**"))
    )
    return lines


def as_markdown(context: dict[str, Any], results: list[Result]) -> str:
    passed = sum(r.passed for r in results)
    lines = ["# torchport GPU check", ""]
    lines += [f"- {key}: {value}" for key, value in context.items()]
    lines += [
        f"- result: {passed} of {len(results)} steps passed",
        "",
        "| step | passed | exit code | seconds | result |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        verdict = "yes" if r.passed else "**no**"
        lines.append(
            f"| {r.name} | {verdict} | {r.exit_code} | {r.seconds} | "
            f"{(r.problem or _summary(r)).replace('|', '/')} |"
        )
    for r in results:
        lines += ["", f"## {r.name}", "", f"`{' '.join(r.command)}`", ""]
        if r.env:
            lines += [f"environment: `{' '.join(f'{k}={v}' for k, v in r.env.items())}`", ""]
        if "share_of_bound" in r.figures:
            lines += _loader_section(r.figures)
        elif r.figures:
            lines += ["```json", json.dumps(r.figures, indent=1, default=str), "```"]
        lines += ["", f"log: {r.log}"]
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write(out: Path, context: dict[str, Any], results: list[Result]) -> tuple[Path, Path]:
    markdown, data = out / "gpu-report.md", out / "gpu-report.json"
    write_atomic(data, json.dumps(as_json(context, results), indent=2, default=str) + "\n")
    write_atomic(markdown, as_markdown(context, results))
    return markdown, data
