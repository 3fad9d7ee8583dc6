# source: https://github.com/NVIDIA/apex/issues/109
# area: porting & distributed
# bug: BatchNorm layers are converted to SyncBatchNorm after the model is already wrapped in DDP, so DDP was built around the old modules and the swapped-in layers are never set up for cross-GPU synchronisation
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SegConfig:
    in_channels: int = 3
    num_classes: int = 4
    width: int = 16
    sync_bn: bool = True
    lr: float = 0.05
    steps: int = 6
    batch_size: int = 4


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class TinySegNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        w = cfg.width
        self.enc1 = conv_block(cfg.in_channels, w)
        self.enc2 = conv_block(w, 2 * w)
        self.dec = conv_block(3 * w, w)
        self.head = nn.Conv2d(w, cfg.num_classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        up = F.interpolate(e2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.head(self.dec(torch.cat([e1, up], dim=1)))


def init_dist():
    if "RANK" not in os.environ:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu"), False, 0
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank), True, local_rank
    return torch.device("cpu"), True, local_rank


def build_model(cfg, device, distributed, local_rank):
    model = TinySegNet(cfg).to(device)
    if distributed:
        ids = [local_rank] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        if cfg.sync_bn:
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # expect: any
    return model


def synthetic_batch(cfg, device, gen):
    img = torch.randn(cfg.batch_size, cfg.in_channels, 32, 32, generator=gen)
    mask = (img[:, 0] > 0).long() + (img[:, 1] > 0.5).long() * 2
    return img.to(device), mask.clamp_(max=cfg.num_classes - 1).to(device)


def train(cfg):
    device, distributed, local_rank = init_dist()
    model = build_model(cfg, device, distributed, local_rank)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    gen = torch.Generator().manual_seed(1234)
    model.train()
    running = torch.zeros((), device=device)
    for step in range(cfg.steps):
        img, mask = synthetic_batch(cfg, device, gen)
        loss = F.cross_entropy(model(img), mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    mean_loss = (running / cfg.steps).item()
    if not distributed or dist.get_rank() == 0:
        print(f"mean train loss {mean_loss:.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    train(SegConfig())
