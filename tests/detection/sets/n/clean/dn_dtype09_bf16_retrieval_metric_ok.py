# twin of: bugs/dn_dtype09_bf16_retrieval_metric.py
# area: dtype
# correct: the embeddings are cast to float32 on the device before the single transfer to NumPy, so bf16 outputs are handled
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_BF16 = device.type == "cuda"


class RecallAtK:
    """Collects embeddings on the device and scores recall@k once at the end."""

    def __init__(self, ks=(1, 5)):
        self.ks = ks
        self.reset()

    def reset(self):
        self.embeddings = []
        self.labels = []

    @torch.no_grad()
    def update(self, embeddings, labels):
        self.embeddings.append(embeddings.detach())
        self.labels.append(labels.detach())

    def compute(self):
        emb = torch.cat(self.embeddings).float().cpu().numpy()
        labels = torch.cat(self.labels).cpu().numpy()
        emb = emb / np.linalg.norm(emb, axis=1, keepdims=True).clip(min=1e-12)
        sim = emb @ emb.T
        np.fill_diagonal(sim, -np.inf)
        order = np.argsort(-sim, axis=1)
        hits = labels[order] == labels[:, None]
        return {f"recall@{k}": float(hits[:, :k].any(axis=1).mean()) for k in self.ks}


class EmbeddingNet(nn.Module):
    def __init__(self, emb_dim=32):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.proj = nn.Linear(32, emb_dim)

    def forward(self, x):
        return self.proj(self.backbone(x))


def synthetic_gallery(n_classes=10, per_class=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    prototypes = torch.randn(n_classes, 3, 1, 1, generator=g)
    images, labels = [], []
    for c in range(n_classes):
        images.append(prototypes[c] + 0.5 * torch.randn(per_class, 3, 32, 32, generator=g))
        labels.append(torch.full((per_class,), c))
    return torch.cat(images), torch.cat(labels)


@torch.no_grad()
def evaluate(model, images, labels, metric, batch_size=16):
    model.eval()
    metric.reset()
    for start in range(0, images.size(0), batch_size):
        xb = images[start:start + batch_size].to(device)
        yb = labels[start:start + batch_size].to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=USE_BF16):
            emb = model(xb)
        metric.update(emb, yb)
    return metric.compute()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = EmbeddingNet().to(device)
    images, labels = synthetic_gallery()
    scores = evaluate(model, images, labels, RecallAtK())
    print({k: round(v, 3) for k, v in scores.items()})
