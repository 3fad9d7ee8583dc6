# source: https://github.com/tdrussell/diffusion-pipe/issues/397
# area: porting & distributed
# bug: the CUDA device index is taken from the global rank, so on the second node of a multi-node torchrun job (rank >= GPUs per node) set_device fails with "invalid device ordinal"
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class LoraTrainConfig:
    latent_dim: int = 32
    rank: int = 4
    steps: int = 8
    micro_batch: int = 16
    lr: float = 1e-3
    num_timesteps: int = 100


def _bootstrap_env():
    if "RANK" in os.environ:
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


def setup_device():
    _bootstrap_env()
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    if torch.cuda.is_available():
        torch.cuda.set_device(rank)  # expect[w]: any
        return torch.device("cuda", rank)  # expect[w]: any
    return torch.device("cpu")


class LoraLinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int):
        super().__init__()
        self.base = base.requires_grad_(False)
        self.down = nn.Linear(base.in_features, r, bias=False)
        self.up = nn.Linear(r, base.out_features, bias=False)
        nn.init.zeros_(self.up.weight)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


class TinyDenoiser(nn.Module):
    def __init__(self, dim, r):
        super().__init__()
        self.t_embed = nn.Embedding(1000, dim)
        self.fc1 = LoraLinear(nn.Linear(dim, 4 * dim), r)
        self.fc2 = LoraLinear(nn.Linear(4 * dim, dim), r)

    def forward(self, x, t):
        return self.fc2(torch.nn.functional.silu(self.fc1(x + self.t_embed(t))))


def make_schedule(num_timesteps, device):
    betas = torch.linspace(1e-4, 2e-2, num_timesteps, device=device)
    return torch.cumprod(1.0 - betas, dim=0)


def main(cfg=LoraTrainConfig()):
    device = setup_device()
    model = TinyDenoiser(cfg.latent_dim, cfg.rank).to(device)
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr)
    alphas_bar = make_schedule(cfg.num_timesteps, device)

    for step in range(cfg.steps):
        x0 = torch.randn(cfg.micro_batch, cfg.latent_dim, device=device)
        t = torch.randint(0, cfg.num_timesteps, (cfg.micro_batch,), device=device)
        noise = torch.randn_like(x0)
        a = alphas_bar[t].unsqueeze(-1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        loss = torch.nn.functional.mse_loss(model(xt, t), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 4 == 0:
            loss_t = loss.detach().clone()
            dist.all_reduce(loss_t)
            if dist.get_rank() == 0:
                print(f"step {step} loss {loss_t.item() / dist.get_world_size():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
