# source: https://github.com/weecology/DeepForest/pull/1290
# area: porting & distributed
# bug: box recall/precision are computed from this rank's validation shard only and logged as the full-set metric on multi-GPU runs
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class CrownBoxRegressor(nn.Module):
    """Predicts a fixed number of boxes (x1, y1, x2, y2, score) per tile."""

    def __init__(self, num_boxes=4):
        super().__init__()
        self.num_boxes = num_boxes
        self.features = nn.Sequential(nn.Conv2d(3, 16, 5, stride=4), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.boxes = nn.Linear(16 * 16, num_boxes * 5)

    def forward(self, images):
        raw = self.boxes(self.features(images)).view(-1, self.num_boxes, 5)
        xy = raw[..., :2].sigmoid() * 0.7
        wh = raw[..., 2:4].sigmoid() * 0.3
        return torch.cat([xy, xy + wh, raw[..., 4:].sigmoid()], dim=-1)


def box_iou(a, b):
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[:, 2:] - a[:, :2]).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


@torch.no_grad()
def evaluate_boxes(model, loader, device, iou_threshold=0.4, score_threshold=0.3):
    model.eval()
    true_positive = torch.zeros((), device=device)
    num_predictions = torch.zeros((), device=device)
    num_ground_truth = torch.zeros((), device=device)
    for images, gt_boxes in loader:
        preds = model(images.to(device))
        gt_boxes = gt_boxes.to(device)
        for pred, gt in zip(preds, gt_boxes):
            keep = pred[:, 4] > score_threshold
            iou = box_iou(pred[:, :4], gt)
            matched = ((iou > iou_threshold) & keep[:, None]).any(dim=0)
            true_positive += matched.sum()
            num_predictions += keep.sum()
            num_ground_truth += gt.shape[0]
    recall = true_positive / num_ground_truth.clamp(min=1)  # expect[w]: any
    precision = true_positive / num_predictions.clamp(min=1)  # expect[w]: any
    return {"box_recall": recall, "box_precision": precision}


def make_tiles(n=96, boxes_per_tile=3):
    g = torch.Generator().manual_seed(3)
    images = torch.rand(n, 3, 64, 64, generator=g)
    xy = torch.rand(n, boxes_per_tile, 2, generator=g) * 0.7
    wh = 0.1 + torch.rand(n, boxes_per_tile, 2, generator=g) * 0.2
    return TensorDataset(images, torch.cat([xy, xy + wh], dim=-1))


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29616")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo")

    val_set = make_tiles()
    val_loader = DataLoader(val_set, batch_size=16,
                            sampler=DistributedSampler(val_set, shuffle=False))
    model = CrownBoxRegressor().to(device)
    results = evaluate_boxes(model, val_loader, device)
    if dist.get_rank() == 0:
        print({k: round(v.item(), 4) for k, v in results.items()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
