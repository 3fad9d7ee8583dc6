# source: https://github.com/tianyu0207/RTFM/issues/47
# area: device placement
# bug: making CUDA the default tensor type sends every CPU-generator factory call (dataset synthesis, the shuffling sampler's randperm) to the GPU, where it clashes with the CPU generator
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


@dataclass
class Config:
    feat_dim: int = 64
    n_segments: int = 16
    batch_size: int = 8
    lr: float = 1e-3
    steps: int = 30
    use_gpu: bool = True


class SnippetFeatures(Dataset):
    """Pre-extracted per-video snippet features; abnormal videos get a bump on a few snippets."""

    def __init__(self, cfg, n_videos, abnormal, seed):
        g = torch.Generator().manual_seed(seed)
        self.feats = torch.randn(n_videos, cfg.n_segments, cfg.feat_dim, generator=g)
        if abnormal:
            idx = torch.randint(0, cfg.n_segments, (n_videos, 3), generator=g)
            for v in range(n_videos):
                self.feats[v, idx[v]] += 2.0
        self.label = float(abnormal)

    def __len__(self):
        return self.feats.shape[0]

    def __getitem__(self, i):
        return self.feats[i], torch.tensor(self.label)


class SnippetScorer(nn.Module):
    def __init__(self, feat_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(feat_dim, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x)).squeeze(-1)


def topk_ranking_loss(n_scores, a_scores, k=3, margin=1.0):
    n_top = n_scores.topk(k, dim=1).values.mean(dim=1)
    a_top = a_scores.topk(k, dim=1).values.mean(dim=1)
    return F.relu(margin - a_top + n_top).mean() + 1e-3 * (a_scores[:, 1:] - a_scores[:, :-1]).pow(2).mean()


def configure_runtime(cfg):
    if cfg.use_gpu and torch.cuda.is_available():
        torch.set_default_tensor_type("torch.cuda.FloatTensor")  # expect: any
        return torch.device("cuda")
    return torch.device("cpu")


def main():
    cfg = Config()
    torch.manual_seed(0)
    device = configure_runtime(cfg)
    normal_dl = DataLoader(SnippetFeatures(cfg, 64, False, 1), batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    abnormal_dl = DataLoader(SnippetFeatures(cfg, 64, True, 2), batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    model = SnippetScorer(cfg.feat_dim).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=5e-3)

    n_iter, a_iter = iter(normal_dl), iter(abnormal_dl)
    running = torch.zeros((), device=device)
    for step in range(1, cfg.steps + 1):
        if (step - 1) % len(normal_dl) == 0:
            n_iter, a_iter = iter(normal_dl), iter(abnormal_dl)
        n_feat, _ = next(n_iter)
        a_feat, _ = next(a_iter)
        n_feat, a_feat = n_feat.to(device), a_feat.to(device)
        loss = topk_ranking_loss(model(n_feat), model(a_feat))
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.detach()
        if step % 10 == 0:
            print(f"step {step}: loss {(running / 10).item():.4f}")
            running.zero_()


if __name__ == "__main__":
    main()
