"""An op that fails on its dtypes is reported (TP353) at the user's line, with the fix.

Under --simulate cuda, an integer matrix product fails as it does on a GPU (CUDA has no
integer matmul kernel), though the CPU that computes it has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from torchport.findings import Finding
from torchport.runtime import halfrange, watch
from torchport.runtime.sites import Site


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _dtype_errors(w: watch) -> list[Finding]:
    return [f for f in w.findings if f.code == "TP353"]


def test_an_integer_matrix_product_on_the_device_fails_as_on_a_gpu() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        adjacency = torch.ones(4, 4, dtype=torch.long, device="cuda")
        adjacency @ torch.eye(4, dtype=torch.long, device="cuda")  # reported here
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# reported here")
    assert found.fix is not None and ".float()" in found.fix.title


def test_an_integer_average_pooling_on_the_device_fails_as_on_a_gpu() -> None:
    refused = pytest.raises(RuntimeError, match="avg_pool2d_out_cuda_frame")
    with watch("cuda") as w, refused:
        labels = torch.randint(0, 3, (1, 1, 8, 8), device="cuda")
        F.avg_pool2d(labels, 2, divisor_override=1)  # pooled here
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# pooled here")


def test_an_integer_max_pooling_on_the_device_fails_as_on_a_gpu() -> None:
    refused = pytest.raises(RuntimeError, match="max_pool2d_with_indices_out_cuda_frame")
    with watch("cuda") as w, refused:
        ids = torch.randint(0, 3, (1, 1, 8, 8), device="cuda")
        F.max_pool2d(ids, 3, stride=1, padding=1)  # max-pooled here
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# max-pooled here")
    with watch("cuda") as w:
        F.max_pool2d(ids.float(), 3, stride=1, padding=1)
    assert _dtype_errors(w) == []


def test_a_floating_matrix_product_on_the_device_runs() -> None:
    with watch("cuda") as w:
        out = torch.ones(4, 4, device="cuda") @ torch.eye(4, device="cuda")
    assert out.sum().item() == 16.0
    assert _dtype_errors(w) == []


def test_a_value_that_does_not_fit_float16_is_reported_with_finfo_as_the_fix() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="overflow"):
        scores = torch.zeros(2, 3, dtype=torch.float16, device="cuda")
        scores.masked_fill(torch.ones(2, 3, dtype=torch.bool, device="cuda"), -1e9)
    [found] = _dtype_errors(w)
    assert found.fix is not None and "finfo" in found.fix.title


def test_an_indexed_write_beyond_float16_is_reported_where_torch_stores_inf() -> None:
    with watch("cuda") as w:
        logits = torch.zeros(2, 5, dtype=torch.float16, device="cuda")
        logits[0, 1] = float(2**30)  # written as inf
        logits[1, 1] = 60000.0  # fits float16
        wide = torch.zeros(2, 5, device="cuda")
        wide[0, 1] = float(2**30)  # float32 holds it
    assert torch.isinf(logits[0, 1]).item()
    [found] = [f for f in w.findings if f.code == "TP317"]
    assert found.location is not None and found.location.line == _line("# written as inf")
    assert found.fix is not None and "finfo" in found.fix.title


def test_whole_numbers_a_bfloat16_cast_rounds_are_reported_at_the_cast() -> None:
    with watch("cuda") as w:
        t = torch.tensor([998.0, 500.0], device="cuda")
        step = t.to(dtype=torch.bfloat16)  # 998 becomes 1000
        small = torch.tensor([3.0, 200.0], device="cuda").bfloat16()  # exact in bfloat16
        noise = (torch.randn(64, device="cuda") * 1000).half()  # not whole numbers
    assert step[0].item() == 1000.0
    assert small.dtype == torch.bfloat16 and noise.dtype == torch.float16
    [found] = [f for f in w.findings if f.code == "TP355"]
    assert found.location is not None and found.location.line == _line("# 998 becomes 1000")
    assert "998 becomes 1000" in found.message


def test_id_columns_of_a_table_cast_to_float16_are_reported_beside_fractional_ratings() -> None:
    # (user id, item id, rating) rows read from one CSV, all cast to the model's dtype
    users, items = torch.arange(0, 6000, 2.0), torch.arange(1, 6001, 2.0)
    ratings = torch.linspace(1.0, 5.0, 3000) + 0.25
    with watch("cuda") as w:
        table = torch.stack([users, items, ratings], dim=1)
        batch = table.to("cuda", dtype=torch.float16)  # ids past 2048 round
        scores = (torch.rand(512, 3) * 4).to("cuda", dtype=torch.float16)  # no whole column
    assert batch.dtype == scores.dtype == torch.float16
    [found] = [f for f in w.findings if f.code == "TP355"]
    assert found.location is not None and found.location.line == _line("# ids past 2048 round")
    assert "of 6000" in found.message  # the two id columns, not the ratings


def test_positions_cast_with_type_as_to_a_float16_buffer_are_reported() -> None:
    with watch("cuda") as w:
        inv_freq = torch.rand(8, device="cuda").half()
        seq = torch.arange(3000, device="cuda").type_as(inv_freq)  # 2049 becomes 2048
    assert seq.dtype == torch.float16
    [found] = [f for f in w.findings if f.code == "TP355"]
    assert found.location is not None and found.location.line == _line("# 2049 becomes 2048")


def test_a_long_bfloat16_arange_is_reported_and_a_short_one_is_not() -> None:
    with watch("cuda") as w:
        torch.arange(100, device="cuda", dtype=torch.bfloat16)
        torch.arange(1024, device="cuda", dtype=torch.bfloat16)  # positions collide
        torch.arange(1024, device="cuda", dtype=torch.float16)  # exact up to 2048
    [found] = [f for f in w.findings if f.code == "TP355"]
    assert found.location is not None and found.location.line == _line("# positions collide")


def test_a_float16_overflow_is_reported_once_where_float32_stays_finite() -> None:
    with watch("cuda") as w:
        x = torch.full((4, 8), 300.0, device="cuda").half()
        scores = torch.zeros(4, 8, device="cuda").half()
        masked = scores.masked_fill(scores == 0, float("-inf"))  # -inf on purpose: no finding
        var = (x - x.mean()).pow(2) + x.pow(2)  # 300**2 overflows float16
        again = x.pow(2)  # a later overflow follows the first
    assert torch.isinf(masked).all() and torch.isinf(var).all() and torch.isinf(again).all()
    [found] = [f for f in w.findings if f.code == "TP351"]
    assert found.location is not None and found.location.line == _line("# 300**2 overflows float16")


def test_float32_input_to_float16_weights_is_reported_with_both_dtypes() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        weight = torch.randn(2, 3, device="cuda").half()
        F.linear(torch.randn(4, 3, device="cuda"), weight)
    [found] = _dtype_errors(w)
    assert "float32" in found.message and "float16" in found.message


def test_a_float32_cache_joined_with_float16_keys_is_named_where_it_was_made() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        keys = torch.zeros(2, 3, 0, 4, device="cuda")  # the cache, float32 by default
        k = torch.randn(2, 3, 1, 4, device="cuda").half()
        keys = torch.cat([keys, k], dim=2)  # float32: the widest of the two
        q = torch.randn(2, 3, 1, 4, device="cuda").half()
        q @ keys.transpose(-1, -2)  # fails here
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# fails here")
    assert [r.line for r in found.related] == [_line("# the cache, float32 by default")]
    assert "then torch.cat with 2 dtypes" in found.message


def _probabilities() -> tuple[torch.Tensor, torch.Tensor]:
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Sigmoid()).to("cuda")
    return model(torch.randn(4, 3, device="cuda")), torch.rand(4, 1, device="cuda")


def test_bce_under_device_autocast_fails_as_cuda_autocast_refuses_it() -> None:
    refused = pytest.raises(RuntimeError, match="unsafe to autocast")
    with watch("cuda") as w, refused, torch.autocast(device_type="cuda", dtype=torch.float16):
        probs, target = _probabilities()
        torch.nn.BCELoss()(probs, target)  # refused here
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# refused here")
    assert found.fix is not None and "BCEWithLogitsLoss" in found.fix.title


def test_bce_runs_where_autocast_is_switched_off_or_on_the_host() -> None:
    with watch("cuda") as w:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            probs, target = _probabilities()
            with torch.autocast(device_type="cuda", enabled=False):
                inside = F.binary_cross_entropy(probs.float(), target)
        outside = F.binary_cross_entropy(probs.float(), target)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            host = F.binary_cross_entropy(torch.rand(4), torch.rand(4))
    assert torch.isfinite(inside) and torch.isfinite(outside) and torch.isfinite(host)
    assert _dtype_errors(w) == []


def test_a_bilinear_resize_of_uint8_frames_fails_as_on_a_gpu_and_nearest_runs() -> None:
    with watch("cuda") as w:
        frames = torch.randint(0, 255, (1, 3, 8, 8), dtype=torch.uint8, device="cuda")
        nearest = F.interpolate(frames, size=(4, 4), mode="nearest")
        with pytest.raises(RuntimeError, match="not implemented for 'Byte'"):
            F.interpolate(frames, size=(4, 4), mode="bilinear")  # resized here
    assert nearest.dtype == torch.uint8
    [found] = _dtype_errors(w)
    assert found.location is not None and found.location.line == _line("# resized here")


class _Collecting:
    """The two observer methods Deferred calls."""

    def __init__(self) -> None:
        self.added: list[tuple[Finding, Site | None]] = []
        self.internals: list[str] = []

    def add(self, finding: Finding, site: Site | None) -> None:
        self.added.append((finding, site))

    def internal(self, where: str, exc: BaseException) -> None:
        self.internals.append(where)


def test_deferred_evidence_is_read_once_per_site_when_the_watch_ends() -> None:
    # on a real CUDA device the flags are device tensors; their bookkeeping is the same here
    deferred = halfrange.Deferred()
    cast, other = Site("train.py", 12, ".to"), Site("train.py", 20, ".to")
    message = "casting whole numbers up to {top} to bfloat16 rounds some of them"
    deferred.note(cast, message, torch.tensor(False), torch.tensor(200.0))
    deferred.note(cast, message, torch.tensor(True), torch.tensor(998.0))
    deferred.note(cast, message, torch.tensor(False), torch.tensor(3.0))
    deferred.note(other, message, torch.tensor(False), torch.tensor(5000.0))
    observer = _Collecting()
    deferred.settle(observer)  # type: ignore[arg-type]
    [(finding, site)] = observer.added
    assert finding.code == "TP355" and site == cast
    assert "up to 998 to bfloat16" in finding.message
    deferred.settle(observer)  # type: ignore[arg-type]
    assert len(observer.added) == 1 and observer.internals == []


def test_pca_lowrank_under_float16_autocast_fails_as_cudas_qr_does() -> None:
    # CUDA autocast runs the matmul inside in float16 and QR has no half kernel there
    # (pytorch/pytorch#99710); CPU autocast, which the simulation runs on, upcasts QR instead
    with pytest.raises(RuntimeError, match="geqrf_cuda"), watch("cuda") as w:
        feats = torch.randn(64, 8, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            torch.pca_lowrank(feats, q=4)  # QR refuses float16
    [found] = [f for f in w.findings if f.code == "TP353"]
    assert found.location is not None and found.location.line == _line("# QR refuses float16")
    assert found.fix is not None and "enabled=False" in found.fix.title


def test_pca_lowrank_outside_autocast_runs_on_the_simulated_device() -> None:
    with watch("cuda") as w:
        feats = torch.randn(64, 8, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            hidden = feats @ torch.randn(8, 8, device="cuda")
            with torch.autocast("cuda", enabled=False):
                _, s, _ = torch.pca_lowrank(hidden.float(), q=4)
    assert s.shape == (4,) and s.device.type == "cuda"
    assert [f for f in w.findings if f.code in ("TP152", "TP353")] == []


@pytest.mark.parametrize(
    ("transform", "sizes"),
    [
        (torch.fft.rfft, "[48]"),
        (lambda x: torch.fft.fft(x, n=40), "[40]"),
        (torch.fft.irfft, "[94]"),  # a real inverse: 2 * (48 - 1) by default
        (lambda x: torch.fft.rfft2(x.view(6, 8)), "[6, 8]"),
    ],
)
def test_a_half_fft_of_a_size_that_is_no_power_of_two_fails_as_cuffts_does(
    transform: Callable[[torch.Tensor], torch.Tensor], sizes: str
) -> None:
    # cuFFT's half precision takes powers of two only (pytorch/pytorch#74857)
    expected = "powers of two when computing in half precision, but got a signal size of"
    with pytest.raises(RuntimeError, match=re.escape(expected + sizes)), watch("cuda"):
        transform(torch.randn(48, device="cuda").half())


def test_a_half_stft_names_its_size_and_a_float32_one_runs() -> None:
    with watch("cuda"):
        wave = torch.randn(2, 4000, device="cuda")
        window = torch.hann_window(1280, device="cuda")
        spec = torch.stft(wave, 1280, hop_length=320, window=window, return_complex=True)
        assert spec.device.type == "cuda"
        with pytest.raises(RuntimeError, match=r"signal size of\[1280\]"):
            torch.stft(wave.half(), 1280, hop_length=320, window=window.half(), return_complex=True)
