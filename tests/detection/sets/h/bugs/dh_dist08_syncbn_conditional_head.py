# source: https://github.com/pytorch/pytorch/issues/44957
# area: porting & distributed
# bug: the mask head (SyncBatchNorm after conversion) only runs on ranks whose batch carries masks, so the SyncBN collectives are not entered by every GPU and training hangs
import os
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(),
                                    nn.Conv2d(ch, ch, 3, stride=2, padding=1), nn.BatchNorm2d(ch), nn.ReLU())

    def forward(self, x):
        return self.layers(x)


class MaskHead(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(), nn.Conv2d(ch, 1, 1))

    def forward(self, feats, size):
        return F.interpolate(self.conv(feats), size=size, mode="bilinear", align_corners=False)


class Detector(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = Backbone()
        self.cls_head = nn.Linear(16, num_classes)
        self.mask_head = MaskHead()

    def forward(self, batch):
        feats = self.backbone(batch["images"])
        logits = self.cls_head(feats.mean(dim=(2, 3)))
        losses = {"cls": F.cross_entropy(logits, batch["labels"])}
        if "masks" in batch:  # expect[w]: any
            pred = self.mask_head(feats, batch["masks"].shape[-2:])
            losses["mask"] = F.binary_cross_entropy_with_logits(pred, batch["masks"])
        return losses


def mixed_source_batches(n, rank, device, bs=4):
    rnd = random.Random(100 + rank)
    g = torch.Generator().manual_seed(rank)
    for _ in range(n):
        batch = {"images": torch.randn(bs, 3, 32, 32, generator=g),
                 "labels": torch.randint(0, 5, (bs,), generator=g)}
        if rnd.random() < 0.5:
            batch["masks"] = (torch.rand(bs, 1, 32, 32, generator=g) > 0.5).float()
        yield {k: v.to(device) for k, v in batch.items()}


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    model = Detector()
    if distributed and device.type == "cuda":
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # expect[w]: any
    model = model.to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if device.type == "cuda" else None, find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    model.train()
    for it, batch in enumerate(mixed_source_batches(8, rank, device)):
        losses = model(batch)
        total = sum(losses.values())
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()
    if rank == 0:
        print("finished", it + 1, "iterations; last losses:", {k: round(v.item(), 4) for k, v in losses.items()})
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
