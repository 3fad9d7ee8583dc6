"""``--plot FILE.png``: bandwidth against size, one line per (direction, memory, mode).

matplotlib is optional: ``available()`` says whether it can be imported, so the CLI refuses
``--plot`` before spending minutes measuring.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def plot_transfer(result: dict[str, Any], path: str) -> None:
    matplotlib = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # files only: never needs a display
    pyplot = importlib.import_module("matplotlib.pyplot")
    figure, axes = pyplot.subplots(figsize=(8, 5))
    lines: dict[str, list[tuple[int, float]]] = {}
    for row in result["rows"]:
        label = f"{row['direction']} {row['memory']} {row['mode']}"
        lines.setdefault(label, []).append((row["bytes"], row["gb_per_s"]))
    for label, points in lines.items():
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    for direction, ceiling in result["ceiling_gb_per_s"].items():
        axes.axhline(ceiling, linestyle=":", color="grey")
        axes.annotate(f"{direction} ceiling", (0.01, ceiling), xycoords=("axes fraction", "data"))
    axes.set_xscale("log", base=2)
    axes.set_xlabel("bytes per copy")
    axes.set_ylabel("GB/s")
    axes.set_title(f"torchport bench transfer: {result['device']}")
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
