from __future__ import annotations

import json

import pytest
import torch

from torchport.bench import parse_size
from torchport.bench.plot import available as matplotlib_available
from torchport.cli import main


def test_sizes_accept_binary_units() -> None:
    assert parse_size("4KiB") == 4096
    assert parse_size("64 MiB") == 64 << 20
    assert parse_size("3g") == 3 << 30
    assert parse_size("100") == 100


def test_malformed_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size("12XB")


def test_bench_without_a_benchmark_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench"]) == 2
    assert "choose 'transfer' or 'loader'" in capsys.readouterr().err


def test_bad_sizes_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "transfer", "--sizes", "4KiB,lots"]) == 2
    assert "--sizes: not a size: 'lots'" in capsys.readouterr().err


@pytest.mark.skipif(matplotlib_available(), reason="needs a machine without matplotlib")
def test_plot_without_matplotlib_fails_before_measuring(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "transfer", "--plot", "out.png"]) == 2
    captured = capsys.readouterr()
    assert "--plot needs matplotlib" in captured.err and captured.out == ""


def test_transfer_json_reports_each_figure_as_a_share_of_the_ceiling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "transfer", "--sizes", "4KiB,64KiB", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    for row in result["rows"]:
        ceiling = result["ceiling_gb_per_s"][row["direction"]]
        assert row["share_of_ceiling"] == pytest.approx(row["gb_per_s"] / ceiling)
    assert {row["bytes"] for row in result["rows"]} == {4096, 65536}


def test_transfer_without_gpu_says_what_was_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    assert main(["bench", "transfer", "--sizes", "4KiB"]) == 0
    out = capsys.readouterr().out
    assert "host->host" in out and "skipped: no CUDA device here" in out
    assert "skipped: pinned memory: needs CUDA" in out


def test_loader_compares_every_mode_with_the_bound_in_every_regime(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["bench", "loader", "--steps", "12", "--leaves", "2", "--leaf-size", "4KiB",
            "--depths", "1,3", "--json"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    regimes = {row["regime"] for row in result["rows"]}
    assert regimes == {"0.5x copy", "1x copy", "2x copy"}
    for regime in regimes:
        rows = {r["mode"]: r for r in result["rows"] if r["regime"] == regime}
        assert {"naive .to() loop", "DeviceLoader prefetch=1", "DeviceLoader prefetch=3",
                "data already on device"} <= set(rows)  # fmt: skip
        bound = min(rows["data already on device"]["steps_per_s"],
                    result["loader_alone_steps_per_s"])  # fmt: skip
        for row in rows.values():
            assert row["share_of_bound"] == pytest.approx(row["steps_per_s"] / bound)


def test_loader_rejects_nonsense_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "loader", "--depths", "0"]) == 2
    assert "depths >= 1" in capsys.readouterr().err


def test_loader_table_names_the_bound_and_what_was_skipped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["bench", "loader", "--steps", "12", "--leaves", "1", "--leaf-size", "4KiB",
            "--depths", "2"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "DeviceLoader prefetch=2" in out and "bound = min(data already on device" in out
    if not torch.cuda.is_available():
        assert "skipped: DataLoader pin_memory=True: pinning needs CUDA" in out
