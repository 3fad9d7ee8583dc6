# source: https://discuss.pytorch.org/t/multi-gpu-torch-load-out-of-memory/117775
# area: porting & distributed
# bug: every rank resumes with torch.load() and no map_location, so the cuda:0 tensors saved by rank 0 are all rebuilt on GPU 0 (extra memory / OOM there)
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def get_device():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class TinyUNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.mid = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.out = nn.Conv2d(ch, 1, 1)

    def forward(self, x):
        return self.out(self.up(self.mid(self.down(x))))


class SegTrainer:
    def __init__(self, workdir, device, distributed):
        self.device = device
        self.distributed = distributed
        self.rank = dist.get_rank() if distributed else 0
        self.ckpt_path = os.path.join(workdir, "last.pt")
        net = TinyUNet().to(device)
        self.model = DDP(net, device_ids=[device] if device.type == "cuda" else None) if distributed else net
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.start_epoch = 0

    @property
    def bare(self):
        return self.model.module if isinstance(self.model, DDP) else self.model

    def save(self, epoch):
        if self.rank == 0:
            torch.save({"model": self.bare.state_dict(), "opt": self.opt.state_dict(), "epoch": epoch},
                       self.ckpt_path)
        if self.distributed:
            dist.barrier()

    def maybe_resume(self):
        if not os.path.exists(self.ckpt_path):
            return
        state = torch.load(self.ckpt_path)  # expect: any
        self.bare.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.start_epoch = state["epoch"] + 1

    def fit(self, epochs, steps=8):
        for epoch in range(self.start_epoch, epochs):
            total = torch.zeros((), device=self.device)
            for _ in range(steps):
                x = torch.rand(8, 1, 32, 32, device=self.device)
                target = (x > 0.5).float()
                loss = F.binary_cross_entropy_with_logits(self.model(x), target)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                total += loss.detach()
            if self.rank == 0:
                print(f"epoch {epoch} loss {(total / steps).item():.4f}")
            self.save(epoch)


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    device = get_device()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = os.environ.get("SEG_WORKDIR", tmp)
        SegTrainer(workdir, device, distributed).fit(epochs=1)
        resumed = SegTrainer(workdir, device, distributed)
        resumed.maybe_resume()
        resumed.fit(epochs=3)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
