# source: https://github.com/tier4/autoware-ml/pull/121
# area: transfer & sync
# bug: the Lovasz loss iterates a CUDA tensor of class ids and branches on a device sum, so every class in every step forces host syncs
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def lovasz_grad(gt_sorted):
    gts = gt_sorted.sum()
    intersection = gts - gt_sorted.cumsum(0)
    union = gts + (1.0 - gt_sorted).cumsum(0)
    jaccard = 1.0 - intersection / union
    if gt_sorted.numel() > 1:
        jaccard[1:] = jaccard[1:] - jaccard[:-1]
    return jaccard


class LovaszSoftmaxLoss(nn.Module):
    def __init__(self, ignore_index=-1):
        super().__init__()
        self.ignore_index = ignore_index

    def _flat(self, probabilities, labels):
        losses = []
        for class_index in labels.unique():  # expect[cls]: any
            foreground = (labels == class_index).to(probabilities.dtype)
            if foreground.sum() == 0:  # expect[cls]: any
                continue
            class_pred = probabilities[:, class_index]  # expect[cls]: any
            errors = (foreground - class_pred).abs()
            errors_sorted, perm = torch.sort(errors, descending=True)
            losses.append(torch.dot(errors_sorted, lovasz_grad(foreground[perm])))
        if not losses:
            return probabilities.sum() * 0.0
        return torch.stack(losses).mean()

    def forward(self, logits, labels):
        probabilities = logits.softmax(dim=1)
        keep = labels != self.ignore_index
        return self._flat(probabilities[keep], labels[keep])


class PointSegHead(nn.Module):
    def __init__(self, in_dim=6, hidden=64, num_classes=8):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, num_classes))

    def forward(self, points):
        return self.mlp(points)


def synthetic_scan(n_points, num_classes, generator):
    xyz = torch.rand(n_points, 3, generator=generator) * 50.0
    feats = torch.rand(n_points, 3, generator=generator)
    labels = (xyz[:, 0] // (50.0 / num_classes)).long().clamp(max=num_classes - 1)
    labels[torch.rand(n_points, generator=generator) < 0.05] = -1
    return torch.cat([xyz / 50.0, feats], dim=1), labels


def train(steps=8, num_classes=8):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = PointSegHead(num_classes=num_classes).to(device)
    ce = nn.CrossEntropyLoss(ignore_index=-1)
    lovasz = LovaszSoftmaxLoss(ignore_index=-1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    history = []
    for step in range(steps):
        points, labels = synthetic_scan(1024, num_classes, g)
        points, labels = points.to(device), labels.to(device)
        logits = model(points)
        loss = ce(logits, labels) + lovasz(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.detach())
    return torch.stack(history)


if __name__ == "__main__":
    losses = train()
    print(f"first {losses[0].item():.4f} last {losses[-1].item():.4f}")
