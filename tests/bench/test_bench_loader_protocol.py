"""The loader benchmark's measuring parts: steady-state window, model sizing, memory figures."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
import torch

from torchport.bench import LoaderSpec, measure_loader
from torchport.bench._loop import Clock, fit_step_cost, timed_pass
from torchport.bench._memory import per_slot_mib
from torchport.cli import main
from torchport.transfer import DeviceLoader

CPU = torch.device("cpu")


def test_the_timed_window_skips_the_warm_up_and_never_reaches_the_end_of_the_source() -> None:
    pulled: list[int] = []
    stepped: list[int] = []

    def source() -> Iterator[int]:
        for i in range(15):
            pulled.append(i)
            yield i

    result = timed_pass(Clock(CPU), source(), stepped.append, steps=10, warmup=5)
    assert stepped == list(range(15)) and pulled == list(range(15))
    assert result.steps_per_s > 0 and result.idle_share is None and result.extra_mib is None


def test_a_prefetching_loader_is_stopped_after_its_pass() -> None:
    loader = DeviceLoader(range(100), "cpu", prefetch=3, background=True)
    timed_pass(Clock(CPU), loader, lambda batch: None, steps=10, warmup=2)
    assert not [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def test_the_model_is_sized_from_its_fixed_and_per_product_cost() -> None:
    # A step that costs 2 ms whatever it does, plus 0.5 ms per product.
    cost = fit_step_cost(lambda iters: 0.002 + 0.0005 * iters)
    assert cost.fixed == pytest.approx(0.002) and cost.per_iter == pytest.approx(0.0005)
    assert cost.iters_for(0.004) == 4  # not 8, as sizing from the products alone gave
    assert cost.iters_for(0.001) == 1  # lighter than the lightest step: one product
    assert cost.seconds(4) == pytest.approx(0.004)


def _rows(extra: dict[int, float], regime: str = "1x copy") -> list[dict[str, object]]:
    return [{"regime": regime, "mode": f"DeviceLoader prefetch={d}", "extra_mib": mib}
            for d, mib in extra.items()]  # fmt: skip


def test_memory_per_prefetch_slot_is_the_slope_over_depths() -> None:
    rows = _rows({1: 10.0, 2: 14.0, 4: 22.0}) + _rows({1: 10.0, 2: 12.0, 4: 16.0}, "2x copy")
    assert per_slot_mib(rows, (1, 2, 4)) == pytest.approx(4.0)  # the steeper regime
    assert per_slot_mib(_rows({2: 14.0}), (2,)) is None


def test_without_cuda_idle_memory_and_drift_are_reported_as_not_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    argv = ["bench", "loader", "--steps", "12", "--leaves", "1", "--leaf-size", "4KiB",
            "--depths", "1,2"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["memory"]["not_measured"] == "needs CUDA"
    assert result["memory"]["extra_mib_per_prefetch_slot"] is None
    assert all(row["device_idle_share"] is None for row in result["rows"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "device memory per prefetch slot and its drift: not measured (needs CUDA)" in out
    assert "device idle share: not measured" in out


def test_each_regime_reports_the_ratio_it_reached() -> None:
    spec = LoaderSpec(leaves=1, leaf_bytes=4096, steps=12, depths=(1,), repeats=1,
                      ratios=(0.5, 2.0))  # fmt: skip
    result = measure_loader(spec)
    regimes = {r["regime"]: r for r in result["regimes"]}
    assert set(regimes) == {"0.5x copy", "2x copy"}
    for regime in regimes.values():
        assert regime["model_iters"] >= 1
        assert regime["achieved_ratio"] == pytest.approx(regime["compute_ms"] / result["copy_ms"])
        assert 0 <= regime["unavoidable_idle_share"] < 1
    assert set(result["loader_alone_by_depth"]) == {"1"}


@pytest.mark.cuda
def test_on_a_gpu_idle_share_memory_per_slot_and_drift_are_measured() -> None:
    spec = LoaderSpec(leaves=4, leaf_bytes=64 << 10, steps=30, depths=(1, 2), repeats=1,
                      drift_steps=200)  # fmt: skip
    result = measure_loader(spec)
    for row in result["rows"]:
        assert 0 <= row["device_idle_share"] <= 1 and row["extra_mib"] >= 0
    memory = result["memory"]
    assert memory["extra_mib_per_prefetch_slot"] is not None and memory["drift_steps"] >= 200
    assert memory["reserved_drift_mib"] is not None
