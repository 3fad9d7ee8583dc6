# source: https://github.com/mir-group/nequip/pull/613
# area: porting & distributed
# bug: every rank torch.load()s the checkpoint rank 0 wrote from cuda:0 without map_location, so all ranks first materialise the full state on GPU 0 (extra contexts, OOM or hang at startup)
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class EnergyModel(nn.Module):
    """Per-atom MLP whose outputs are summed into a molecular energy."""

    def __init__(self, n_species=5, dim=32):
        super().__init__()
        self.species = nn.Embedding(n_species, dim)
        self.mlp = nn.Sequential(nn.Linear(dim + 3, dim), nn.SiLU(), nn.Linear(dim, 1))

    def forward(self, z, pos):
        h = torch.cat([self.species(z), pos], dim=-1)
        return self.mlp(h).squeeze(-1).sum(dim=1)


class Checkpointer:
    def __init__(self, directory):
        self.path = os.path.join(directory, "last.ckpt")

    def save(self, model, optimizer, step):
        if dist.get_rank() == 0:
            torch.save({"model": model.module.state_dict(),
                        "optim": optimizer.state_dict(),
                        "step": step}, self.path)
        dist.barrier()

    def load(self, model, optimizer):
        ckpt = torch.load(self.path)  # expect: any
        model.module.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optim"])
        return ckpt["step"]


def setup():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def random_molecules(batch, atoms, gen, device):
    z = torch.randint(0, 5, (batch, atoms), generator=gen, device=device)
    pos = torch.randn(batch, atoms, 3, generator=gen, device=device)
    energy = (z.float() * pos.norm(dim=-1)).sum(dim=1) * 0.1
    return z, pos, energy


def build(device):
    model = DDP(EnergyModel().to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return model, optimizer


def run(model, optimizer, start, stop, gen, device):
    for step in range(start, stop):
        z, pos, target = random_molecules(16, 12, gen, device)
        loss = nn.functional.mse_loss(model(z, pos), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return loss.detach()


def main():
    device = setup()
    gen = torch.Generator(device=device).manual_seed(dist.get_rank())
    shared = [tempfile.mkdtemp(prefix="ckpt_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    ckpt = Checkpointer(shared[0])
    model, optimizer = build(device)
    run(model, optimizer, 0, 10, gen, device)
    ckpt.save(model, optimizer, 10)

    resumed, resumed_opt = build(device)
    start = ckpt.load(resumed, resumed_opt)
    loss = run(resumed, resumed_opt, start, start + 10, gen, device)
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"resumed at step {start}, loss {loss.item():.4f}")
        shutil.rmtree(shared[0])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
