"""What `torchport port` rewrites in a single file, what it refuses, and that it is idempotent."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
import torch

from torchport.port import PortOptions, port_source

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "torchport" / "examples" / "cpu_training.py"


def port(code: str, **options: object) -> tuple[str, list[str]]:
    result = port_source(textwrap.dedent(code), "snippet.py", PortOptions(**options))  # type: ignore[arg-type]
    again = port_source(result.after, "snippet.py", PortOptions(**options))  # type: ignore[arg-type]
    assert again.after == result.after, "porting ported code must change nothing"
    return result.after, [
        f"{n.location.line if n.location else 0}: {n.message}" for n in result.notes
    ]


@pytest.fixture(scope="module")
def example() -> tuple[str, list[str]]:
    return port(EXAMPLE.read_text())


@pytest.mark.parametrize(
    "expected",
    [
        'device = torch.device(\n    "cuda"\n    if torch.cuda.is_available()',
        "model = Classifier().to(device)",
        "criterion = nn.CrossEntropyLoss().to(device)",
        "x = x.to(device, non_blocking=True)",
        "y = y.to(device, non_blocking=True)",
        "torch.randn(x.shape, device=x.device)",
        'self.register_buffer("scale", torch.ones(channels, 1, 1), persistent=False)',
        "self.blocks = nn.ModuleList([\n            nn.Conv2d(1, channels, 3, padding=1),",
        'torch.load(checkpoint, map_location="cpu")',
        "pin_memory=torch.cuda.is_available()",
        "torch.from_numpy(self.images[i]).float()",
    ],
)
def test_bundled_example_gets_each_rewrite(example: tuple[str, list[str]], expected: str) -> None:
    assert expected in example[0]


def test_bundled_example_keeps_comments_and_explains_the_module_list(
    example: tuple[str, list[str]],
) -> None:
    after, notes = example
    assert "# float64, as NumPy makes it" in after
    assert any("ModuleList" in n and "optimizer" in n for n in notes)


def test_factory_in_a_helper_called_from_forward_gets_the_device_threaded_from_the_caller() -> None:
    code = """
    import torch
    import torch.nn as nn

    def causal_mask(n):
        return torch.triu(torch.ones(n, n), diagonal=1).bool()

    class Attn(nn.Module):
        def forward(self, x):
            return x.masked_fill(causal_mask(x.size(1)), 0.0)
    """
    after, notes = port(code)
    assert "def causal_mask(n, device=None):" in after
    assert "torch.triu(torch.ones(n, n, device=device), diagonal=1)" in after
    assert "x.masked_fill(causal_mask(x.size(1), device=x.device), 0.0)" in after
    assert notes == []


def test_legacy_typed_constructor_is_listed_not_rewritten() -> None:
    after, notes = port("import torch\nx = torch.FloatTensor(3, 4)\n")
    assert "torch.FloatTensor(3, 4)" in after
    assert len(notes) == 1 and "legacy `torch.FloatTensor`" in notes[0]


def test_tensor_set_before_super_init_is_listed_not_turned_into_a_buffer() -> None:
    code = """
    import torch
    from torch import nn

    class M(nn.Module):
        def __init__(self):
            self.w = torch.ones(3)
            super().__init__()
    """
    after, notes = port(code)
    assert "self.w = torch.ones(3)" in after
    assert "before `super().__init__()`" in notes[0]


def test_dict_and_comprehension_of_modules_become_module_containers() -> None:
    code = """
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = {"a": nn.Linear(2, 2), "b": nn.Linear(2, 3)}
            self.blocks = [nn.Linear(2, 2) for _ in range(3)]
    """
    after, _ = port(code)
    assert 'self.heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 3)})' in after
    assert "self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])" in after


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("probs.numpy()", "probs.detach().cpu().numpy()"),
        ("out.detach().numpy()", "out.detach().cpu().numpy()"),
        ("out.cpu().numpy()", "out.cpu().numpy()"),
        ("x.cuda()", "x.to(device)"),
        ("x.cuda(non_blocking=True)", "x.to(device, non_blocking=True)"),
        ('x.to("cuda:0")', "x.to(device)"),
        ('torch.zeros(3, device="cuda")', "torch.zeros(3, device=device)"),
        ('x.to("cpu")', 'x.to("cpu")'),
    ],
)
def test_device_bound_expressions_are_rewritten(before: str, after: str) -> None:
    ported, _ = port(f"import torch\n\n\ndef f(x, probs, out):\n    return {before}\n")
    assert f"return {after}\n" in ported


def test_deprecated_cuda_amp_becomes_torch_amp_with_the_same_meaning() -> None:
    code = """
    import torch
    from torch.cuda.amp import GradScaler, autocast

    scaler = GradScaler(enabled=False)
    with autocast(False):
        pass
    with torch.cuda.amp.autocast(dtype=torch.float16):
        pass
    """
    after, _ = port(code)
    assert "from torch.amp import GradScaler, autocast" in after
    assert 'scaler = GradScaler("cuda", enabled=False)' in after
    assert 'with autocast("cuda", enabled=False):' in after
    assert 'with torch.amp.autocast("cuda", dtype=torch.float16):' in after


def test_data_reaching_the_model_moves_where_it_is_made_and_one_time_draws_stay_cpu_draws() -> None:
    code = """
    import torch
    import torch.nn as nn

    def noise(n):
        return torch.rand(n, 1)

    X = torch.randn(8, 3)
    Y = X.sum(dim=1, keepdim=True) + torch.randn(8, 1)
    model = nn.Linear(3, 1)
    for step in range(2):
        jitter = torch.randn(8, 1) + noise(8)
        loss = ((model(X) - Y + jitter) ** 2).mean()
    """
    after, _ = port(code)
    # Drawn once: from the CPU generator as before, then copied, so that the ported program
    # computes on the same numbers (CUDA's generator gives others).
    assert "X = torch.randn(8, 3).to(device)\n" in after
    assert "Y = X.sum(dim=1, keepdim=True) + torch.randn(8, 1).to(device)\n" in after
    assert "model = nn.Linear(3, 1).to(device)\nfor step in range(2):" in after
    # Drawn at every step, in the loop or in a helper it calls: on the device, no copy.
    assert "jitter = torch.randn(8, 1, device=device) + noise(8)" in after
    assert "return torch.rand(n, 1, device=device)" in after


def test_script_without_functions_gets_moves_at_module_level() -> None:
    code = """
    import torch
    import torch.nn as nn

    net = nn.Sequential(nn.Linear(2, 2))
    data = torch.randn(3, 2)
    print(net(data).detach().numpy())
    """
    after, _ = port(code)
    assert "net = nn.Sequential(nn.Linear(2, 2)).to(device)\n" in after
    assert "data = torch.randn(3, 2).to(device)\nprint(net(data).detach().cpu().numpy())" in after


def test_distributed_script_without_main_guard_sets_up_and_tears_down_at_module_level() -> None:
    code = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    loader = DataLoader(data, batch_size=4, shuffle=True)
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
    torch.save(model.state_dict(), "model.pt")
    """
    after, notes = port(code, distributed=True)
    assert notes == []
    compile(after, "ported.py", "exec")
    lines = after.splitlines()
    init = lines.index(
        'dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")'
    )
    assert init < lines.index("data = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))")
    assert lines[-2:] == ["dist.barrier()", "dist.destroy_process_group()"]
    assert "sampler=DistributedSampler(data, shuffle=True)" in after
    assert "batch_size=4 // dist.get_world_size()" in after
    assert "    loader.sampler.set_epoch(epoch)" in lines
    assert 'if RANK == 0:\n    torch.save(model.state_dict(), "model.pt")\ndist.barrier()' in after


def test_float64_numpy_data_the_program_casts_later_is_cast_where_it_enters_torch() -> None:
    out, _ = port(
        """
        import numpy as np
        import torch
        rng = np.random.default_rng(0)
        x = torch.from_numpy(rng.standard_normal((4, 3)))
        y = torch.tensor(np.zeros(3))
        z = torch.from_numpy(np.zeros(3, dtype=np.float32))
        print(x.float().sum(), y.float().sum(), z.sum())
        """
    )
    assert "torch.from_numpy(rng.standard_normal((4, 3))).float()" in out
    assert "torch.tensor(np.zeros(3)).float()" in out
    assert "torch.from_numpy(np.zeros(3, dtype=np.float32))\n" in out


def test_float64_numpy_data_used_as_float64_stays_float64() -> None:
    out, _ = port(
        """
        import numpy as np
        import torch
        x = torch.from_numpy(np.linspace(0, 1, 5))
        print((x * 2).sum().item())
        """
    )
    assert "x = torch.from_numpy(np.linspace(0, 1, 5))\n" in out


def test_amp_bf16_sends_binary_cross_entropy_through_a_helper_that_turns_autocast_off() -> None:
    # CUDA's autocast refuses F.binary_cross_entropy and nn.BCELoss ("unsafe to autocast")
    after, _ = port(
        """\
        import torch
        import torch.nn.functional as F
        from torch import nn

        model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
        criterion = nn.BCELoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.rand(8, 1)
        for step in range(2):
            p = model(x)
            loss = criterion(p, y) + F.binary_cross_entropy(p, y, reduction="sum")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """,
        amp="bf16",
    )
    assert (
        "loss = bce_without_autocast(criterion, p, y) + "
        'bce_without_autocast(F.binary_cross_entropy, p, y, reduction="sum")'
    ) in after
    assert "with torch.autocast(input.device.type, enabled=False):" in after
    namespace: dict[str, object] = {}
    exec(compile(after, "ported.py", "exec"), namespace)  # the helper computes the loss
    bce = namespace["bce_without_autocast"]
    p = torch.tensor([0.25, 0.75], dtype=torch.bfloat16)
    y = torch.tensor([0.0, 1.0])
    got = bce(torch.nn.functional.binary_cross_entropy, p, y)  # type: ignore[operator]
    assert got.dtype == torch.float32
    assert got.item() == pytest.approx(-math.log(0.75), rel=1e-6)


def test_without_amp_binary_cross_entropy_is_left_as_it_is() -> None:
    after, _ = port(
        """\
        import torch.nn.functional as F

        def loss(p, y):
            return F.binary_cross_entropy(p, y)
        """
    )
    assert "bce_without_autocast" not in after
