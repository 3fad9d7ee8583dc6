# source: https://github.com/dylanyunlon/Neuron_SP/issues/150
# area: porting & distributed
# bug: the partial squared grad-norm is packed into a CPU tensor and passed to dist.all_reduce, which the NCCL backend rejects ("No backend type associated with device type cpu")
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def init_distributed(store_dir):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if "RANK" in os.environ:
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method=f"file://{store_dir}/store", rank=0, world_size=1)
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class ShardedGradClipper:
    """Each rank measures the norm of the parameters it owns; the partial sums are added across ranks."""

    def __init__(self, params, max_norm):
        self.params = [p for p in params if p.requires_grad]
        self.max_norm = max_norm
        rank, world = dist.get_rank(), dist.get_world_size()
        self.owned = [p for i, p in enumerate(self.params) if i % world == rank]

    def _partial_sq_norm(self):
        grads = [p.grad.detach().float() for p in self.owned if p.grad is not None]
        if not grads:
            return 0.0
        return torch.stack([g.pow(2).sum() for g in grads]).sum().item()  # expect[c]: any

    def clip_(self):
        partial = torch.tensor([self._partial_sq_norm()], dtype=torch.float64)  # expect[c]: any
        dist.all_reduce(partial, op=dist.ReduceOp.SUM)  # expect[c]: any
        total_norm = partial.sqrt().squeeze(0).float()
        coef = (self.max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for p in self.params:
            if p.grad is not None:
                p.grad.mul_(coef.to(p.grad.device))
        return total_norm


class MLPRegressor(nn.Module):
    def __init__(self, d_in=32, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def train(device, steps=40):
    torch.manual_seed(0)
    model = MLPRegressor().to(device)
    ddp = DDP(model, device_ids=[device] if device.type == "cuda" else None)
    clipper = ShardedGradClipper(ddp.parameters(), max_norm=1.0)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    w_true = torch.randn(32, device=device)
    running = torch.zeros((), device=device)
    for _ in range(steps):
        x = torch.randn(64, 32, device=device)
        y = x @ w_true + 0.1 * torch.randn(64, device=device)
        loss = F.mse_loss(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clipper.clip_()
        opt.step()
        running += loss.detach()
    if dist.get_rank() == 0:
        print(f"mean loss over {steps} steps: {(running / steps).item():.4f}")


def main():
    with tempfile.TemporaryDirectory() as store_dir:
        device = init_distributed(store_dir)
        try:
            train(device)
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
