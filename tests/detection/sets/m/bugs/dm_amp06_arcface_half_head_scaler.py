# source: https://github.com/Lightning-AI/pytorch-lightning/issues/7078
# area: AMP
# bug: when AMP is on the ArcFace head keeps its weight as a float16 Parameter, so on a GPU its gradient is float16 and GradScaler.unscale_ raises "Attempting to unscale FP16 gradients"
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class RetrievalConfig:
    in_dim: int = 48
    emb_dim: int = 32
    n_classes: int = 20
    scale: float = 30.0
    margin: float = 0.5
    amp: bool = True
    epochs: int = 3
    lr: float = 1e-3


class ArcMarginProduct(nn.Module):
    def __init__(self, in_features, out_features, scale, margin, param_dtype=torch.float32):
        super().__init__()
        self.scale = scale
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=param_dtype))
        nn.init.xavier_uniform_(self.weight)
        self.register_buffer("cos_m", torch.tensor(math.cos(margin)))
        self.register_buffer("sin_m", torch.tensor(math.sin(margin)))
        self.register_buffer("th", torch.tensor(math.cos(math.pi - margin)))
        self.register_buffer("mm", torch.tensor(math.sin(math.pi - margin) * margin))

    def forward(self, emb, label):
        cosine = F.linear(F.normalize(emb), F.normalize(self.weight)).float()
        sine = torch.sqrt((1.0 - cosine.pow(2)).clamp(min=1e-6))
        phi = cosine * self.cos_m - sine * self.sin_m
        phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = F.one_hot(label, cosine.shape[1]).to(cosine.dtype)
        return self.scale * (one_hot * phi + (1.0 - one_hot) * cosine)


class EmbeddingNet(nn.Module):
    def __init__(self, cfg: RetrievalConfig, amp_active: bool):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(cfg.in_dim, 128), nn.BatchNorm1d(128), nn.ReLU(),
                                      nn.Linear(128, cfg.emb_dim))
        head_dtype = torch.float16 if amp_active else torch.float32  # expect: any
        self.head = ArcMarginProduct(cfg.emb_dim, cfg.n_classes, cfg.scale, cfg.margin, param_dtype=head_dtype)

    def forward(self, x, label=None):
        emb = self.backbone(x)
        if label is None:
            return F.normalize(emb.float())
        return self.head(emb, label)


def make_data(cfg, n=640, device="cpu"):
    g = torch.Generator().manual_seed(1)
    centers = torch.randn(cfg.n_classes, cfg.in_dim, generator=g) * 2
    labels = torch.randint(0, cfg.n_classes, (n,), generator=g)
    feats = centers[labels] + torch.randn(n, cfg.in_dim, generator=g)
    return feats.to(device), labels.to(device)


def train(cfg, device):
    amp_active = cfg.amp and device.type == "cuda"
    model = EmbeddingNet(cfg, amp_active).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler(device.type, enabled=amp_active)
    feats, labels = make_data(cfg, device=device)
    for epoch in range(cfg.epochs):
        perm = torch.randperm(feats.shape[0], device=device)
        running = torch.zeros((), device=device)
        for i in range(0, feats.shape[0], 64):
            idx = perm[i:i + 64]
            with torch.autocast(device.type, dtype=torch.float16, enabled=amp_active):
                logits = model(feats[idx], labels[idx])
                loss = F.cross_entropy(logits, labels[idx])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(opt)
            scaler.update()
            running += loss.detach()
        print(f"epoch {epoch}: arcface loss {(running / 10).item():.3f}")
    model.eval()
    with torch.no_grad():
        emb = model(feats[:200])
        sim = emb @ emb.t()
        nn_idx = sim.fill_diagonal_(-2.0).argmax(dim=1)
        print("top-1 retrieval acc:", (labels[:200][nn_idx] == labels[:200]).float().mean().item())


if __name__ == "__main__":
    train(RetrievalConfig(), torch.device("cuda" if torch.cuda.is_available() else "cpu"))
