# source: https://github.com/huggingface/transformers/issues/25938
# area: AMP
# bug: the matcher's pairwise sigmoid-CE cost is a matmul summed over ~100k mask points and runs in float16 under CUDA autocast, so it overflows to inf and the query-target matching becomes arbitrary
import torch
import torch.nn as nn
import torch.nn.functional as F


class QueryMaskHead(nn.Module):
    def __init__(self, num_queries=12, dim=16, num_classes=4):
        super().__init__()
        self.pixel = nn.Sequential(nn.Conv2d(3, dim, 3, padding=1), nn.ReLU(), nn.Conv2d(dim, dim, 1))
        self.queries = nn.Embedding(num_queries, dim)
        self.cls = nn.Linear(dim, num_classes + 1)

    def forward(self, images):
        feats = self.pixel(images)
        q = self.queries.weight
        mask_logits = torch.einsum("qd,bdhw->bqhw", q, feats) / q.shape[1] ** 0.5 - 2.0
        class_logits = self.cls(q).unsqueeze(0).expand(images.shape[0], -1, -1)
        return {"mask_logits": mask_logits, "class_logits": class_logits}


def pairwise_sigmoid_ce_cost(pred, tgt):
    num_points = pred.shape[1]
    pos = F.binary_cross_entropy_with_logits(pred, torch.ones_like(pred), reduction="none")
    neg = F.binary_cross_entropy_with_logits(pred, torch.zeros_like(pred), reduction="none")
    loss_pos = torch.matmul(pos, tgt.T)  # expect[w]: any
    loss_neg = torch.matmul(neg, (1 - tgt).T)  # expect[w]: any
    return (loss_pos + loss_neg) / num_points


class MaskMatcher:
    def __init__(self, cost_class=1.0, cost_mask=5.0):
        self.cost_class = cost_class
        self.cost_mask = cost_mask

    @torch.no_grad()
    def __call__(self, outputs, targets):
        matches = []
        for b, tgt in enumerate(targets):
            probs = outputs["class_logits"][b].softmax(-1)
            cost_cls = -probs[:, tgt["labels"]]
            pred = outputs["mask_logits"][b].flatten(1)
            tmask = tgt["masks"].flatten(1).to(pred.dtype)
            cost = self.cost_class * cost_cls + self.cost_mask * pairwise_sigmoid_ce_cost(pred, tmask)
            matches.append(cost.argmin(dim=0))
        return matches


def set_criterion(outputs, targets, matches):
    losses = []
    for b, (tgt, q_idx) in enumerate(zip(targets, matches)):
        pred_masks = outputs["mask_logits"][b, q_idx].float()
        mask_loss = F.binary_cross_entropy_with_logits(pred_masks, tgt["masks"].float())
        cls_loss = F.cross_entropy(outputs["class_logits"][b, q_idx].float(), tgt["labels"])
        losses.append(mask_loss + cls_loss)
    return torch.stack(losses).mean()


def make_targets(batch, size, device, g):
    ys, xs = torch.meshgrid(torch.arange(size) - size / 2, torch.arange(size) - size / 2, indexing="ij")
    targets = []
    for _ in range(batch):
        angles = torch.rand(3, generator=g) * 6.28
        masks = torch.stack([(torch.cos(a) * xs + torch.sin(a) * ys) > 0 for a in angles])
        labels = torch.randint(0, 4, (3,), generator=g)
        targets.append({"masks": masks.to(device), "labels": labels.to(device)})
    return targets


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model, matcher = QueryMaskHead().to(device), MaskMatcher()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    g, size = torch.Generator().manual_seed(0), 288
    for _ in range(2):
        images = torch.randn(2, 3, size, size, generator=g).to(device)
        targets = make_targets(2, size, device, g)
        with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
            outputs = model(images)
            matches = matcher(outputs, targets)
            loss = set_criterion(outputs, targets, matches)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print("matched queries:", [m.tolist() for m in matches], "loss", round(loss.item(), 4))


if __name__ == "__main__":
    main()
