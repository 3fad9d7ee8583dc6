"""``python3 dev.py wheelhouse``: the wheels torchport and its tests need, for another machine.

A GPU machine often has its own torch and no internet. This fills a git-ignored folder with
binary wheels for its Python version and platform, so that ``dev.py gpu`` installs from it with
``--no-index``: torchport's runtime dependencies, the pinned test requirements of
requirements-dev.txt minus torch (the machine has its own) and minus the gate tools (ruff, mypy,
import-linter, TorchFix, flake8: the GPU run does not run the gates), and the build backend an
offline ``pip install -e .`` needs. numpy is fetched separately and may be missing for a Python
the pin has no wheel for: the GPU machine's own numpy is used then.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

NOT_FOR_GPU_RUN = frozenset({"torch", "torchfix", "flake8", "ruff", "mypy", "import-linter"})
OPTIONAL = frozenset({"numpy"})
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"
_LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1).lower().replace("_", "-") if match else ""


def _toml_array(text: str, section: str, key: str) -> list[str]:
    """The strings of ``key = [...]`` in ``[section]`` (Python 3.10 has no tomllib)."""
    body = re.search(rf"^\[{re.escape(section)}\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    array = body and re.search(rf"^{re.escape(key)}\s*=\s*\[(.*?)\]", body.group(1), re.M | re.S)
    if not array:
        raise ValueError(f"pyproject.toml: no {key} in [{section}]")
    return re.findall(r'"([^"]+)"', array.group(1))


def _applies(requirement: str, python_version: str) -> bool:
    """Evaluate a ``python_version <op> 'X.Y'`` marker for the target Python; keep others."""
    marker = re.search(
        r";\s*python_version\s*(<=|>=|<|>|==|!=)\s*['\"](\d+)\.(\d+)['\"]\s*$", requirement
    )
    if marker is None:
        return True
    target = tuple(int(p) for p in python_version.split(".")[:2])
    bound = (int(marker.group(2)), int(marker.group(3)))
    op = marker.group(1)
    return {
        "<": target < bound,
        "<=": target <= bound,
        ">": target > bound,
        ">=": target >= bound,
        "==": target == bound,
        "!=": target != bound,
    }[op]


def requirements(root: Path, python_version: str) -> tuple[list[str], list[str]]:
    """(needed, optional) requirement lines for a GPU run on ``python_version``, markers dropped."""
    pins = [
        line.split("#")[0].strip()
        for line in (root / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    ]
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    runtime = _toml_array(pyproject, "project", "dependencies")
    build = _toml_array(pyproject, "build-system", "requires")
    wanted = [r for r in pins if r and _name(r) not in NOT_FOR_GPU_RUN] + runtime + build
    kept = [r.split(";")[0].strip() for r in wanted if _applies(r, python_version)]
    needed = list(dict.fromkeys(r for r in kept if _name(r) not in OPTIONAL))
    optional = list(dict.fromkeys(r for r in kept if _name(r) in OPTIONAL))
    return needed, optional


def platform_tags(platform: str) -> list[str]:
    """``manylinux_2_28_x86_64`` and every older manylinux it runs (pip does not expand them)."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if match is None:
        return [platform]
    newest, arch = int(match.group(1)), match.group(2)
    tags = []
    for minor in range(newest, 4, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        if minor in _LEGACY_MANYLINUX:
            tags.append(f"{_LEGACY_MANYLINUX[minor]}_{arch}")
    return tags


def download_command(
    pip: list[str], dest: Path, python_version: str, platforms: list[str], reqs: list[str]
) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    command = [
        *pip,
        "download",
        "--only-binary=:all:",
        "--dest",
        str(dest),
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "--abi",
        abi,
    ]
    for platform in platforms:
        for tag in platform_tags(platform):
            command += ["--platform", tag]
    return command + reqs


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 dev.py wheelhouse", description=__doc__)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's X.Y")
    parser.add_argument(
        "--platform",
        action="append",
        help=f"wheel platform (repeatable; default {DEFAULT_PLATFORM}, older manylinux included)",
    )
    parser.add_argument("--dest", type=Path, default=Path(".whl"), help="folder (default .whl)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d+", args.python_version):
        parser.error(f"--python-version must look like 3.12, got {args.python_version!r}")
    return args


def run(argv: list[str], root: Path, pip: Callable[[], list[str]]) -> int:
    """``pip()`` gives the pip command to download with, once the arguments are known good."""
    args = _parse(argv)
    dest = args.dest if args.dest.is_absolute() else root / args.dest
    dest.mkdir(parents=True, exist_ok=True)
    needed, optional = requirements(root, args.python_version)
    platforms = args.platform or [DEFAULT_PLATFORM]
    pip_command = pip()
    command = download_command(pip_command, dest, args.python_version, platforms, needed)
    print("+", " ".join(command), flush=True)
    if subprocess.run(command, check=False).returncode != 0:
        print("dev.py wheelhouse: pip could not download the wheels above", file=sys.stderr)
        return 1
    for requirement in optional:
        extra = download_command(pip_command, dest, args.python_version, platforms, [requirement])
        if subprocess.run(extra, check=False, capture_output=True).returncode != 0:
            print(
                f"dev.py wheelhouse: no {requirement} wheel for Python {args.python_version}; "
                "the GPU machine's own will be used",
                file=sys.stderr,
            )
    size = sum(f.stat().st_size for f in dest.glob("*.whl"))
    print(f"{dest}: {len(list(dest.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB")
    return 0
