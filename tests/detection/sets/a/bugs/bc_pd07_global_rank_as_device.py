# source: https://github.com/Project-MONAI/model-zoo/issues/444
# area: porting & distributed
# bug: the device index is taken from the global rank (dist.get_rank()), which exceeds the per-node GPU count on every node after the first; it must be LOCAL_RANK
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(cfg):
    if "RANK" not in os.environ:  # single-process fallback for `python FILE`
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    cfg["rank"] = dist.get_rank()
    cfg["is_main"] = cfg["rank"] == 0
    if torch.cuda.is_available():
        cfg["device"] = torch.device(f"cuda:{cfg['rank']}")  # expect: any
        torch.cuda.set_device(cfg["device"])
    else:
        cfg["device"] = torch.device("cpu")
    return cfg


class UNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        return self.up(self.down(x))


def dice_loss(logits, target, eps=1.0):
    p = torch.sigmoid(logits)
    inter = (p * target).sum((1, 2, 3))
    return 1 - ((2 * inter + eps) / (p.sum((1, 2, 3)) + target.sum((1, 2, 3)) + eps)).mean()


def main():
    torch.manual_seed(0)
    cfg = setup({"epochs": 2, "batch_size": 8})
    dev = cfg["device"]
    img = torch.rand(64, 1, 16, 16)
    ds = TensorDataset(img, (img > 0.6).float())
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=cfg["batch_size"], sampler=sampler)
    model = DDP(UNetTiny().to(dev), device_ids=[dev.index] if dev.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(cfg["epochs"]):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = dice_loss(model(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if cfg["is_main"]:
            print(f"epoch {epoch}: dice loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
