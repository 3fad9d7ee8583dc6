# source: https://github.com/LibreYOLO/libreyolo/pull/531
# area: porting & distributed
# bug: sync_bn defaults to off, so under multi-GPU DDP with 4 images per rank every BatchNorm normalises over its tiny local shard and only rank 0's running stats are evaluated and saved
import os
import socket
import tempfile
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class DetConfig:
    img_size: int = 32
    grid: int = 8
    batch_per_gpu: int = 4
    epochs: int = 2
    lr: float = 1e-3
    sync_bn: bool = False  # expect: any


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class TinyDetector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn(3, 16, 2), conv_bn(16, 32, 2), conv_bn(32, 32))
        self.head = nn.Conv2d(32, 5, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


class BoxDataset(Dataset):
    def __init__(self, n, cfg, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 3, cfg.img_size, cfg.img_size, generator=g)
        self.cells = torch.randint(0, cfg.grid * cfg.grid, (n,), generator=g)
        self.boxes = torch.rand(n, 4, generator=g)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.cells[i], self.boxes[i]


def detection_loss(pred, cells, boxes):
    b = pred.shape[0]
    flat = pred.flatten(2)
    obj_target = torch.zeros_like(flat[:, 0])
    obj_target[torch.arange(b, device=pred.device), cells] = 1.0
    obj = F.binary_cross_entropy_with_logits(flat[:, 0], obj_target)
    box_pred = flat[torch.arange(b, device=pred.device), 1:, cells].sigmoid()
    return obj + F.l1_loss(box_pred, boxes)


def build_model(cfg, device, local_rank):
    model = TinyDetector(cfg)
    if cfg.sync_bn and device.type == "cuda" and dist.get_world_size() > 1:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device)
    return DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    cfg = DetConfig()
    torch.manual_seed(0)
    data = BoxDataset(96, cfg)
    sampler = DistributedSampler(data, shuffle=True)
    loader = DataLoader(data, batch_size=cfg.batch_per_gpu, sampler=sampler, drop_last=True)
    model = build_model(cfg, device, local_rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros((), device=device)
        for images, cells, boxes in loader:
            images, cells, boxes = images.to(device), cells.to(device), boxes.to(device)
            loss = detection_loss(model(images), cells, boxes)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {(total / len(loader)).item():.4f}")
    if dist.get_rank() == 0:
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(model.module.state_dict(), os.path.join(tmp, "last.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
