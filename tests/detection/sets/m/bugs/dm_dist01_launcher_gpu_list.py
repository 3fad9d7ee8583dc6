# source: https://github.com/plemeri/InSPyReNet/pull/6
# area: porting & distributed
# bug: the worker indexes the physical GPU ids from the config by local rank, but the launcher already exported them in CUDA_VISIBLE_DEVICES, so cuda:2/cuda:3 are invalid ordinals inside each worker
import os
import shlex
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class LaunchConfig:
    gpus: str = "2,3"
    epochs: int = 2
    steps_per_epoch: int = 8
    batch_size: int = 4
    image_size: int = 32
    lr: float = 1e-3

    @property
    def device_ids(self):
        return [int(g) for g in self.gpus.split(",") if g.strip()]

    def launch_command(self, script):
        env = f"CUDA_VISIBLE_DEVICES={self.gpus}"
        nproc = len(self.device_ids)
        return f"{env} torchrun --nproc_per_node={nproc} {shlex.quote(script)}"


class SaliencyNet(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.enc1 = nn.Conv2d(3, width, 3, padding=1)
        self.enc2 = nn.Conv2d(width, width * 2, 3, stride=2, padding=1)
        self.dec = nn.Conv2d(width * 2, 1, 3, padding=1)

    def forward(self, x):
        h = F.relu(self.enc1(x))
        h = F.relu(self.enc2(h))
        logits = self.dec(h)
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


def setup_worker(cfg):
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    distributed = "RANK" in os.environ and dist.is_available()
    if torch.cuda.is_available():
        device_id = cfg.device_ids[local_rank]  # expect: any
        torch.cuda.set_device(device_id)
        device = torch.device("cuda", device_id)
    else:
        device = torch.device("cpu")
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device, distributed


def synthetic_batch(cfg, device, generator):
    images = torch.rand(cfg.batch_size, 3, cfg.image_size, cfg.image_size, generator=generator)
    masks = (images.mean(dim=1, keepdim=True) > 0.5).float()
    return images.to(device), masks.to(device)


def train(cfg):
    device, distributed = setup_worker(cfg)
    model = SaliencyNet().to(device)
    if distributed:
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    generator = torch.Generator().manual_seed(0)

    for epoch in range(cfg.epochs):
        running = torch.zeros((), device=device)
        for _ in range(cfg.steps_per_epoch):
            images, masks = synthetic_batch(cfg, device, generator)
            logits = model(images)
            loss = F.binary_cross_entropy_with_logits(logits, masks)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        avg = (running / cfg.steps_per_epoch).item()
        if not distributed or dist.get_rank() == 0:
            print(f"epoch {epoch}: bce={avg:.4f}")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    config = LaunchConfig()
    print("launch with:", config.launch_command(__file__))
    train(config)
