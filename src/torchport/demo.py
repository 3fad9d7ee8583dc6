"""``python -m torchport.demo``: torchport's main job on the bundled CPU training script.

It runs, in order, each command that is available: ``doctor`` (is there a usable GPU?),
``check`` (what would go wrong on a GPU?), ``port`` (rewrite it for any device, into a temporary
folder) and ``run --simulate cuda`` on the ported script (does it now run on a GPU?). Nothing
outside the temporary folder is written.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from importlib.resources import files
from pathlib import Path

from torchport.cli import main as torchport


def _available(command: str) -> bool:
    return importlib.util.find_spec(f"torchport.cli.{command}") is not None


def _step(title: str, argv: list[str]) -> int:
    print(f"\n$ torchport {' '.join(argv)}    # {title}", flush=True)
    code = torchport(argv)
    sys.stdout.flush()
    print(f"(exit code {code})", flush=True)
    return code


def main() -> int:
    example = Path(str(files("torchport.examples") / "cpu_training.py"))
    worst = 0
    with tempfile.TemporaryDirectory(prefix="torchport-demo-") as tmp:
        shutil.copyfile(example, Path(tmp) / "cpu_training.py")
        script = "cpu_training.py"  # run from the copy's folder, so paths read as in a project
        steps: list[tuple[str, str, list[str]]] = [
            ("doctor", "is a GPU usable here, and if not, why?", ["doctor"]),
            ("check", "what would break or be slow on a GPU?", ["check", script]),
            ("port", "the device-agnostic rewrite, as a diff", ["port", script]),
            ("port", "apply it", ["port", "--write", script]),
            (
                "run",
                "run the ported script on a simulated GPU",
                ["run", "--simulate", "cuda", script],
            ),
        ]
        here = os.getcwd()
        os.chdir(tmp)
        try:
            for command, title, argv in steps:
                if _available(command):
                    worst = max(worst, _step(title, argv))
        finally:
            os.chdir(here)
    # Findings (exit 1) are the point of a demo; only a tool error (2) fails it.
    return 2 if worst >= 2 else 0


if __name__ == "__main__":
    raise SystemExit(main())
