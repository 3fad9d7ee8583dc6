# source: https://github.com/tier4/Diffusion-Planner/pull/256
# area: porting & distributed
# bug: closed-loop validation all-reduces and barriers across ranks but is only reached inside the rank-0 checkpoint block, so multi-GPU DDP deadlocks
import os
import socket
import tempfile
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class TrainConfig:
    history: int = 8
    horizon: int = 12
    epochs: int = 4
    save_every: int = 2
    n_scenarios: int = 32
    lr: float = 3e-4


class Planner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.horizon = cfg.horizon
        self.net = nn.Sequential(nn.Linear(cfg.history * 2, 128), nn.GELU(), nn.Linear(128, cfg.horizon * 2))

    def forward(self, hist):
        return self.net(hist.flatten(1)).view(-1, self.horizon, 2)


def make_scenarios(n, cfg, seed):
    g = torch.Generator().manual_seed(seed)
    vel = torch.randn(n, 1, 2, generator=g) * 0.5
    t = torch.arange(cfg.history + cfg.horizon, dtype=torch.float32).view(1, -1, 1)
    traj = vel * t + 0.05 * torch.randn(n, cfg.history + cfg.horizon, 2, generator=g)
    return traj[:, :cfg.history], traj[:, cfg.history:]


@torch.no_grad()
def closed_loop_validate(model, cfg, device, rank, world_size):
    hist, future = make_scenarios(cfg.n_scenarios, cfg, seed=123)
    hist, future = hist[rank::world_size].to(device), future[rank::world_size].to(device)
    pred = model(hist)
    ade = (pred - future).norm(dim=-1).mean(dim=1)
    off_road = (pred.abs().amax(dim=(1, 2)) > 20.0).float()
    stats = torch.stack([ade.sum(), off_road.sum(), torch.tensor(float(len(ade)), device=device)])
    if world_size > 1:
        dist.all_reduce(stats)
        dist.barrier()
    return {"ade": stats[0] / stats[2], "off_road_rate": stats[1] / stats[2]}


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(MASTER_PORT=str(s.getsockname()[1]))
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo")
    global_rank, world_size = dist.get_rank(), dist.get_world_size()

    cfg = TrainConfig()
    torch.manual_seed(0)
    model = DDP(Planner(cfg).to(device), device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    hist, future = make_scenarios(256, cfg, seed=global_rank)
    hist, future = hist.to(device), future.to(device)
    with tempfile.TemporaryDirectory() as out_dir:

        for epoch in range(cfg.epochs):
            for i in range(0, len(hist), 32):
                loss = F.smooth_l1_loss(model(hist[i:i + 32]), future[i:i + 32])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if global_rank == 0:
                torch.save(model.module.state_dict(), os.path.join(out_dir, f"planner_{epoch}.pt"))
                if (epoch + 1) % cfg.save_every == 0:
                    metrics = closed_loop_validate(model.module, cfg, device, global_rank, world_size)  # expect: any
                    print(f"epoch {epoch} ade {metrics['ade'].item():.3f} off_road {metrics['off_road_rate'].item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
