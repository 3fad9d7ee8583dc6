"""Find a local ``torch`` (a folder or a ``torch.py``) that ``import torch`` would load first.

A script run from a folder that holds ``torch/`` or ``torch.py`` imports that instead of the
installed torch. The probe finds it by looking, never by importing it, reports it, and takes
its entry off its own ``sys.path`` so that the installed torch is what it probes. Standard
library only: this runs in the probe subprocess before torch is imported.
"""

from __future__ import annotations

import os
import re
import sys
from importlib.machinery import PathFinder
from typing import Any

# A wheel's dist-info or a develop install's egg-info beside the package marks it installed.
_METADATA = re.compile(r"torch(-[^-]+)?\.(dist|egg)-info", re.IGNORECASE)


def _installed_in(entry: str) -> bool:
    try:
        names = os.listdir(entry or os.curdir)
    except OSError:
        return False
    return any(_METADATA.fullmatch(name) for name in names)


def torch_origin(entry: str) -> str | None:
    """The file ``import torch`` would run from ``entry``, found without running anything.

    A ``torch`` folder without ``__init__.py`` is a namespace portion, which an installed torch
    later on the path still wins over: it is not counted.
    """
    try:
        spec = PathFinder.find_spec("torch", [entry])
    except (ImportError, OSError, ValueError):
        return None
    if spec is None or spec.loader is None or not spec.origin:
        return None
    return spec.origin


def _described(entry: str, origin: str, cwd: str) -> dict[str, Any]:
    package = os.path.basename(origin).startswith("__init__.")
    path = os.path.dirname(origin) if package else origin
    place = "working directory" if os.path.abspath(entry or os.curdir) == cwd else "sys.path"
    return {"path": path, "kind": "folder" if package else "file", "entry": entry, "on": place}


def find_local_torch(entries: list[str], cwd: str) -> list[dict[str, Any]]:
    """Every torch on ``entries`` that is not an installed distribution, in import order."""
    found = []
    for entry in entries:
        origin = torch_origin(entry)
        if origin is not None and not _installed_in(entry):
            found.append(_described(entry, origin, cwd))
    return found


def probe_local_torch() -> dict[str, Any]:
    """What a script run from here imports as torch; drops local ones from this ``sys.path``."""
    cwd = os.getcwd()
    # The user's scripts (run from here, or with -m, -c, or in a REPL) get the working directory
    # first; this process deliberately does not have it.
    user_path = [cwd, *sys.path]
    local = find_local_torch(user_path, cwd)
    first = next((entry for entry in user_path if torch_origin(entry) is not None), None)
    shadowing = local[0] if local and first == local[0]["entry"] else None
    dropped = {item["entry"] for item in local}
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    return {"cwd": cwd, "shadowing": shadowing, "local": local}
