# source: https://github.com/pytorch/pytorch/issues/107132
# area: transfer & sync
# bug: torch.unique(return_inverse=True) on the GPU labels inside the per-step loss does a blocking D2H copy every iteration
import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbeddingNet(nn.Module):
    def __init__(self, in_dim=64, emb_dim=32, num_classes=40):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Linear(in_dim, 128), nn.ReLU(), nn.Linear(128, emb_dim)
        )
        self.classifier = nn.Linear(emb_dim, num_classes)

    def forward(self, x):
        emb = self.backbone(x)
        return emb, self.classifier(emb)


class BatchCenterLoss(nn.Module):
    """Pulls every embedding toward the mean embedding of its class in the batch."""

    def __init__(self, weight=0.1):
        super().__init__()
        self.weight = weight

    def forward(self, emb, labels):
        classes, inverse = torch.unique(labels, return_inverse=True)  # expect: any
        sums = emb.new_zeros(classes.numel(), emb.size(1))
        sums.index_add_(0, inverse, emb)
        counts = emb.new_zeros(classes.numel())
        counts.index_add_(0, inverse, torch.ones_like(inverse, dtype=emb.dtype))
        centers = sums / counts.clamp(min=1).unsqueeze(1)
        return self.weight * (emb - centers[inverse]).pow(2).sum(dim=1).mean()


def make_batches(n_batches, batch_size, in_dim, num_classes, seed=0):
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(num_classes, in_dim, generator=g)
    for _ in range(n_batches):
        y = torch.randint(0, num_classes, (batch_size,), generator=g)
        x = protos[y] + 0.5 * torch.randn(batch_size, in_dim, generator=g)
        yield x, y


def train(device, steps=150):
    model = EmbeddingNet().to(device)
    center = BatchCenterLoss(weight=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    running = torch.zeros((), device=device)
    for step, (x, y) in enumerate(make_batches(steps, 128, 64, 40)):
        x, y = x.to(device), y.to(device)
        emb, logits = model(x)
        loss = F.cross_entropy(logits, y) + center(emb, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
        if (step + 1) % 50 == 0:
            print(f"step {step + 1}: loss={(running / 50).item():.4f}")
            running.zero_()
    return model


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train(dev)
