# source: https://github.com/weecology/DeepForest/issues/1407
# area: porting & distributed
# bug: the metric's all_reduce is only reached on ranks whose validation shard had annotated images, so a rank with only empty tiles skips the collective and the other GPUs hang in NCCL
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def init_distributed(store_dir):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if "RANK" in os.environ:
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method=f"file://{store_dir}/pg", rank=0, world_size=1)
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class TreeTiles(Dataset):
    """Tiles with at most one crown box (x1, y1, x2, y2); has_box=0 marks an empty tile."""

    def __init__(self, n=48, empty_every=3):
        g = torch.Generator().manual_seed(3)
        self.images = torch.rand(n, 3, 32, 32, generator=g)
        xy = torch.rand(n, 2, generator=g) * 0.5
        self.boxes = torch.cat([xy, xy + 0.3 + 0.2 * torch.rand(n, 2, generator=g)], dim=1)
        self.has_box = torch.tensor([0.0 if i % empty_every == 0 else 1.0 for i in range(n)])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.boxes[i], self.has_box[i]


class BoxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.reg = nn.Linear(8 * 16, 4)

    def forward(self, x):
        xy1, wh = self.reg(self.features(x)).sigmoid().split(2, dim=1)
        return torch.cat([xy1 * 0.6, xy1 * 0.6 + wh * 0.4 + 0.05], dim=1)


def box_iou(a, b):
    lt = torch.maximum(a[:, :2], b[:, :2])
    rb = torch.minimum(a[:, 2:], b[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=1)
    area = lambda t: (t[:, 2:] - t[:, :2]).prod(dim=1)
    return inter / (area(a) + area(b) - inter)


class IoUMetric:
    def __init__(self, device, iou_thresh=0.4):
        self.device, self.iou_thresh = device, iou_thresh
        self.stats = torch.zeros(3, device=device)  # sum_iou, hits, n_annotated
        self.annotated_images = 0

    def update(self, pred, target, has_box, n_annotated):
        iou = box_iou(pred, target) * has_box
        self.stats += torch.stack([iou.sum(), (iou > self.iou_thresh).float().sum(), has_box.sum()])
        self.annotated_images += n_annotated

    def compute(self):
        dist.all_reduce(self.stats, op=dist.ReduceOp.SUM)
        sum_iou, hits, n = self.stats.unbind()
        return {"miou": sum_iou / n.clamp(min=1), "recall": hits / n.clamp(min=1)}


@torch.no_grad()
def validate(model, loader, device):
    metric = IoUMetric(device)
    model.eval()
    for imgs, boxes, has_box in loader:
        n_annotated = int(has_box.count_nonzero())
        imgs, boxes, has_box = imgs.to(device), boxes.to(device), has_box.to(device)
        metric.update(model(imgs), boxes, has_box, n_annotated)
    results = {}
    if metric.annotated_images > 0:  # expect: any
        results.update(metric.compute())
    return results


def main():
    with tempfile.TemporaryDirectory() as store_dir:
        device = init_distributed(store_dir)
        model = BoxHead().to(device)
        ds = TreeTiles()
        loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=False))
        results = validate(model, loader, device)
        if dist.get_rank() == 0:
            print({k: round(v.item(), 4) for k, v in results.items()})
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
