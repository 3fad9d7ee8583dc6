"""Bench results as tables for people (``--json`` prints the same dicts as they are)."""

from __future__ import annotations

from typing import Any, TextIO

from rich.table import Table

from torchport.report.terminal import console_for


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f} %"


def render(kind: str, result: dict[str, Any], stream: TextIO) -> None:
    console = console_for(stream)
    console.print(f"torchport bench {kind} on {result['device']}")
    table = _transfer_table(result) if kind == "transfer" else _loader_table(result)
    console.print(table)
    if kind == "transfer":
        for direction, ceiling in result["ceiling_gb_per_s"].items():
            console.print(f"ceiling {direction}: {ceiling:.2f} GB/s (best measured)")
    else:
        for line in _loader_notes(result):
            console.print(line)
    for reason in result["skipped"]:
        console.print(f"skipped: {reason}")


def _loader_notes(result: dict[str, Any]) -> list[str]:
    lines = [
        f"batch {result['batch_mib']:.2f} MiB, copy {result['copy_ms']:.3f} ms, "
        f"loader alone {result['loader_alone_steps_per_s']:.0f} steps/s (best depth); "
        "bound = min(data already on device, loader alone)"
    ]
    for regime in result["regimes"]:
        lines.append(
            f"{regime['regime']}: {regime['model_iters']} products, step "
            f"{regime['compute_ms']:.3f} ms = {regime['achieved_ratio']:.2f} x the copy; "
            f"idle the bound leaves: {_percent(regime['unavoidable_idle_share'])}"
        )
    memory = result["memory"]
    if memory.get("not_measured"):
        why = memory["not_measured"]
        lines.append(f"device memory per prefetch slot and its drift: not measured ({why})")
    else:
        slot = memory["extra_mib_per_prefetch_slot"]
        lines.append(
            "extra device memory per prefetch slot: "
            + ("-" if slot is None else f"{slot:.1f} MiB")
            + f"; reserved-memory drift over {memory['drift_steps']} steps at prefetch="
            f"{memory['drift_prefetch']}: {memory['reserved_drift_mib']:+.1f} MiB"
        )
    return lines


def _transfer_table(result: dict[str, Any]) -> Table:
    table = Table()
    for column in ("direction", "memory", "mode", "size", "GB/s", "of ceiling"):
        table.add_column(column, justify="right" if column in ("size", "GB/s") else "left")
    for row in result["rows"]:
        table.add_row(row["direction"], row["memory"], row["mode"], human_bytes(row["bytes"]),
                      f"{row['gb_per_s']:.2f}", _percent(row["share_of_ceiling"]))  # fmt: skip
    return table


def _loader_table(result: dict[str, Any]) -> Table:
    table = Table()
    for column in ("regime", "mode", "steps/s", "of bound", "device idle", "extra MiB"):
        table.add_column(column)
    for row in result["rows"]:
        mib = row["extra_mib"]
        table.add_row(row["regime"], row["mode"], f"{row['steps_per_s']:.1f}",
                      _percent(row["share_of_bound"]), _percent(row["device_idle_share"]),
                      "-" if mib is None else f"{mib:.1f}")  # fmt: skip
    return table
