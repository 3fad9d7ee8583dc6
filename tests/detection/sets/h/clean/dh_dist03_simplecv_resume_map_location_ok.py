# twin of: bugs/dh_dist03_simplecv_resume_map_location.py
# area: porting & distributed
# correct: the checkpoint is mapped to CPU and load_state_dict copies it onto each rank's own device, so nothing lands on cuda:0 by accident
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class SegHead(nn.Module):
    def __init__(self, in_ch=3, classes=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(in_ch, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.cls = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        out = self.cls(self.enc(x))
        return F.interpolate(out, size=x.shape[-2:], mode="bilinear", align_corners=False)


class CheckpointManager:
    def __init__(self, model_dir, model, optimizer, rank=0):
        self.model_dir = model_dir
        self.model = model
        self.optimizer = optimizer
        self.rank = rank

    @property
    def path(self):
        return os.path.join(self.model_dir, "model-last.pth")

    def _unwrap(self):
        return self.model.module if hasattr(self.model, "module") else self.model

    def save(self, step):
        if self.rank == 0:
            torch.save({"model": self._unwrap().state_dict(),
                        "opt": self.optimizer.state_dict(),
                        "global_step": step}, self.path)
        if dist.is_initialized():
            dist.barrier()

    def resume(self):
        if not os.path.exists(self.path):
            return 0
        ckpt = torch.load(self.path, map_location="cpu")
        self._unwrap().load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["opt"])
        return ckpt["global_step"]


def run_steps(model, optimizer, device, n, start):
    model.train()
    g = torch.Generator().manual_seed(start)
    for _ in range(n):
        img = torch.randn(4, 3, 32, 32, generator=g).to(device)
        mask = torch.randint(0, 4, (4, 32, 32), generator=g).to(device)
        loss = F.cross_entropy(model(img), mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return start + n


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank() if distributed else 0
    model = SegHead().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    with tempfile.TemporaryDirectory() as d:
        if distributed:
            holder = [d]
            dist.broadcast_object_list(holder, src=0)
            d = holder[0]
        manager = CheckpointManager(d, model, optimizer, rank)
        step = run_steps(model, optimizer, device, 3, manager.resume())
        manager.save(step)
        step = run_steps(model, optimizer, device, 2, manager.resume())
        if rank == 0:
            print("resumed and reached step", step)
        if distributed:
            dist.barrier()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
