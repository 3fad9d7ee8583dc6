# source: https://github.com/roboflow/rf-detr/pull/1492
# area: transfer & sync
# bug: the matcher solves the assignment on the GPU, then moves the index pairs to the CPU, and the criterion indexes CUDA targets with them again (a D2H sync plus implicit H2D copies every step)
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


class GreedyMatcher(nn.Module):
    def __init__(self, cost_class=2.0, cost_bbox=5.0):
        super().__init__()
        self.cost_class, self.cost_bbox = cost_class, cost_bbox

    @staticmethod
    def _solve(cost):
        c = cost.clone()
        big = torch.finfo(c.dtype).max
        rows, cols = [], []
        for _ in range(cost.shape[1]):
            flat = c.argmin()
            r, k = flat // c.shape[1], flat % c.shape[1]
            rows.append(r)
            cols.append(k)
            c.index_fill_(0, r.view(1), big).index_fill_(1, k.view(1), big)
        return torch.stack(rows), torch.stack(cols)

    @torch.no_grad()
    def forward(self, logits, boxes, targets):
        batch_ids, rows, cols = [], [], []
        for b, tgt in enumerate(targets):
            prob = logits[b].softmax(-1)
            cost = -self.cost_class * prob[:, tgt["labels"]] + self.cost_bbox * torch.cdist(boxes[b], tgt["boxes"], p=1)
            r, k = self._solve(cost)
            batch_ids.append(torch.full_like(r, b))
            rows.append(r)
            cols.append(k)
        pair = torch.stack((torch.cat(batch_ids), torch.cat(rows), torch.cat(cols))).cpu()  # expect[m]: any
        return pair


class SetCriterion(nn.Module):
    def __init__(self, num_classes, eos_coef=0.1):
        super().__init__()
        self.num_classes = num_classes
        self.matcher = GreedyMatcher()
        weight = torch.ones(num_classes + 1)
        weight[-1] = eos_coef
        self.register_buffer("empty_weight", weight)

    def _dense_targets(self, targets, pair, shape, device):
        packed = pad_sequence([torch.cat([t["labels"][:, None].float(), t["boxes"],
                                          torch.ones_like(t["boxes"][:, :1])], dim=1) for t in targets],
                              batch_first=True)
        dense = torch.zeros(*shape, 6, device=device)
        dense[pair[0], pair[1]] = packed[pair[0], pair[2]]  # expect[m]: any
        return dense

    def forward(self, logits, pred_boxes, targets):
        pair = self.matcher(logits, pred_boxes, targets)
        dense = self._dense_targets(targets, pair, logits.shape[:2], logits.device)
        matched = dense[..., 5]
        no_object = torch.full_like(matched, self.num_classes, dtype=torch.long)
        target_classes = torch.where(matched > 0, dense[..., 0].long(), no_object)
        loss_ce = F.cross_entropy(logits.transpose(1, 2), target_classes, self.empty_weight)
        num_boxes = max(float(pair.shape[1]), 1.0)
        l1 = (pred_boxes - dense[..., 1:5]).abs().sum(-1)
        loss_bbox = (l1 * matched).sum() / num_boxes
        return {"loss_ce": loss_ce, "loss_bbox": loss_bbox}


class TinyDetector(nn.Module):
    def __init__(self, num_queries=20, num_classes=5, dim=64):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, dim, 8, stride=8), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.queries = nn.Parameter(torch.randn(num_queries, dim))
        self.class_head = nn.Linear(dim, num_classes + 1)
        self.box_head = nn.Linear(dim, 4)

    def forward(self, images):
        feat = self.backbone(images).flatten(1)
        h = torch.relu(self.queries[None] + feat[:, None])
        return self.class_head(h), self.box_head(h).sigmoid()


def synthetic_batch(batch, num_classes, device, g):
    images = torch.rand(batch, 3, 64, 64, device=device)
    targets = []
    for _ in range(batch):
        n = int(torch.randint(1, 6, (1,), generator=g))
        targets.append({"labels": torch.randint(0, num_classes, (n,), device=device),
                        "boxes": torch.rand(n, 4, device=device)})
    return images, targets


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model, criterion = TinyDetector().to(device), SetCriterion(num_classes=5).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    total = torch.zeros((), device=device)
    for step in range(6):
        images, targets = synthetic_batch(4, 5, device, g)
        losses = criterion(*model(images), targets)
        loss = losses["loss_ce"] + 5.0 * losses["loss_bbox"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    print(f"mean loss {(total / 6).item():.4f}")


if __name__ == "__main__":
    main()
