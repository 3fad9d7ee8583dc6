"""The driver table, wheel recommendations and architecture matching behind TP502-TP505."""

from __future__ import annotations

import pytest

from torchport.doctor import drivers
from torchport.doctor.checks_build import arch_supports, parse_arch
from torchport.doctor.facts import kernel_module_version, local_tag, version_tuple


@pytest.mark.parametrize(
    ("cuda", "expected"),
    [
        ((12, 4), ("550.54.14", "525.60.13")),
        ((12, 5), ("550.54.14", "525.60.13")),  # unlisted minor: nearest lower entry
        ((13, 1), ("580.65.06", "580")),
        ((11, 8), ("520.61.05", "450.80.02")),
        ((10, 2), None),
        ((), None),
    ],
)
def test_requirement_reads_the_anchor_table(
    cuda: tuple[int, ...], expected: tuple[str, str] | None
) -> None:
    assert drivers.requirement(cuda) == expected


@pytest.mark.parametrize(
    ("driver", "wheel"),
    [
        ("590.48.01", (13, 0)),
        ("575.51.03", (12, 8)),
        ("560.35.03", (12, 6)),
        ("535.104.05", (12, 6)),  # 12.x only through minor-version compatibility: the oldest
        ("470.82.01", (11, 8)),
        ("440.33.01", None),
        (None, (12, 6)),
    ],
)
def test_best_wheel_cuda_picks_the_newest_wheel_the_driver_runs(
    driver: str | None, wheel: tuple[int, int] | None
) -> None:
    assert drivers.best_wheel_cuda(driver) == wheel


@pytest.mark.parametrize(
    ("driver_cuda", "wheel"), [((12, 9), (12, 8)), ((12, 2), (12, 6)), ((11, 4), (11, 8))]
)
def test_wheel_for_driver_cuda_stays_in_the_drivers_major_version(
    driver_cuda: tuple[int, int], wheel: tuple[int, int]
) -> None:
    assert drivers.wheel_for_driver_cuda(driver_cuda) == wheel


def test_install_command_names_every_package_and_the_index() -> None:
    assert drivers.install_command((12, 8), ["torch", "torchvision"]) == (
        "pip install --force-reinstall torch torchvision "
        "--index-url https://download.pytorch.org/whl/cu128"
    )


@pytest.mark.parametrize(
    ("arch", "parsed"),
    [
        ("sm_86", ("sm", (8, 6), False)),
        ("sm_100", ("sm", (10, 0), False)),
        ("sm_90a", ("sm", (9, 0), True)),
        ("compute_90", ("compute", (9, 0), False)),
        ("gfx90a", None),
    ],
)
def test_parse_arch(arch: str, parsed: object) -> None:
    assert parse_arch(arch) == parsed


@pytest.mark.parametrize(
    ("arch_list", "cap", "runs"),
    [
        (["sm_80", "sm_90"], (8, 6), True),  # same major, later minor
        (["sm_80", "sm_90"], (12, 0), False),
        (["sm_80", "compute_90"], (12, 0), True),  # PTX is compiled for later GPUs
        (["sm_90a"], (9, 0), True),
        (["sm_90a"], (9, 1), False),  # arch-specific code runs on that arch only
        (["sm_86"], (8, 0), False),
        (["sm_50", "sm_60"], (3, 7), False),
    ],
)
def test_arch_supports(arch_list: list[str], cap: tuple[int, int], runs: bool) -> None:
    assert arch_supports(arch_list, cap) is runs


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("550.54.14", (550, 54, 14)), ("2.5.1+cu124", (2, 5, 1)), ("2.6.0a0", (2, 6, 0)), (None, ())],
)
def test_version_tuple(text: object, parsed: tuple[int, ...]) -> None:
    assert version_tuple(text) == parsed


@pytest.mark.parametrize(
    ("version", "tag"),
    [("0.20.0+cu121", "cu121"), ("2.5.1+cpu", "cpu"), ("2.5.1", None), (None, None)],
)
def test_local_tag(version: object, tag: str | None) -> None:
    assert local_tag(version) == tag


def test_kernel_module_version_is_read_from_proc() -> None:
    text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build"
    assert kernel_module_version({"host": {"proc_driver_version": text}}) == "570.86.15"
