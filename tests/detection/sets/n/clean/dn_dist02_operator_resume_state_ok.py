# twin of: bugs/dn_dist02_operator_resume_state.py
# area: porting & distributed
# correct: load_training_state maps the checkpoint onto this rank's own device, so no rank touches cuda:0 unless it owns it
import os
import shutil
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class SpectralConv1d(nn.Module):
    def __init__(self, channels, modes):
        super().__init__()
        self.modes = modes
        self.weight = nn.Parameter(torch.randn(channels, channels, modes, dtype=torch.cfloat) / channels**2)

    def forward(self, x):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros_like(x_ft)
        out_ft[..., : self.modes] = torch.einsum("bix,iox->box", x_ft[..., : self.modes], self.weight)
        return torch.fft.irfft(out_ft, n=x.shape[-1])


class TinyFNO(nn.Module):
    def __init__(self, width=16, modes=8):
        super().__init__()
        self.lift = nn.Conv1d(1, width, 1)
        self.spectral = SpectralConv1d(width, modes)
        self.local = nn.Conv1d(width, width, 1)
        self.project = nn.Conv1d(width, 1, 1)

    def forward(self, x):
        h = self.lift(x)
        h = torch.nn.functional.gelu(self.spectral(h) + self.local(h))
        return self.project(h)


def save_training_state(save_dir, save_name, model, optimizer, epoch):
    if dist.is_initialized() and dist.get_rank() != 0:
        return
    module = model.module if isinstance(model, DDP) else model
    torch.save(module.state_dict(), Path(save_dir) / f"{save_name}_state_dict.pt")
    torch.save({"optimizer": optimizer.state_dict(), "epoch": epoch}, Path(save_dir) / "training_state.pt")


def load_training_state(save_dir, save_name, model, optimizer, map_location):
    model.load_state_dict(torch.load(Path(save_dir) / f"{save_name}_state_dict.pt", map_location=map_location))
    state = torch.load(Path(save_dir) / "training_state.pt", map_location=map_location)
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]


def run_epoch(model, optimizer, device, steps=5):
    running = torch.zeros((), device=device)
    for _ in range(steps):
        x = torch.randn(32, 1, 64, device=device)
        y = torch.cumsum(x, dim=-1) / x.shape[-1]
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return running / steps


def build(device, distributed):
    model = TinyFNO().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = [device.index] if device.type == "cuda" else None
    return model, (DDP(model, device_ids=ids) if distributed else model), optimizer


def shared_checkpoint_dir(distributed):
    path = tempfile.mkdtemp(prefix="fno_") if not distributed or dist.get_rank() == 0 else None
    if distributed:
        holder = [path]
        dist.broadcast_object_list(holder, src=0)
        path = holder[0]
    return path


def main():
    distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    ckpt_dir = shared_checkpoint_dir(distributed)
    try:
        model, ddp_model, optimizer = build(device, distributed)
        run_epoch(ddp_model, optimizer, device)
        save_training_state(ckpt_dir, "model", ddp_model, optimizer, epoch=1)
        if distributed:
            dist.barrier()

        model, _, optimizer = build(device, False)
        start_epoch = load_training_state(ckpt_dir, "model", model, optimizer, map_location=device)
        ddp_model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None) if distributed else model
        loss = run_epoch(ddp_model, optimizer, device)
        if not distributed or dist.get_rank() == 0:
            print(f"resumed from epoch {start_epoch}, loss {loss.item():.4f}")
    finally:
        if distributed:
            dist.barrier()
        if not distributed or dist.get_rank() == 0:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
