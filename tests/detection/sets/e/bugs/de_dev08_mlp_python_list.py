# source: https://github.com/twitter/the-algorithm-ml/pull/136
# area: device placement
# bug: the MLP keeps its Linear layers in a plain Python list, so model.to(cuda) and model.parameters() never see them
from dataclasses import dataclass, field
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class MlpConfig:
    in_features: int
    layer_sizes: List[int] = field(default_factory=lambda: [64, 32])
    dropout: float = 0.1
    final_activation: bool = False


class Mlp(nn.Module):
    def __init__(self, cfg: MlpConfig):
        super().__init__()
        self.cfg = cfg
        self.layers = []  # expect: any
        width = cfg.in_features
        for size in cfg.layer_sizes:
            self.layers.append(nn.Linear(width, size))
            width = size
        self.dropout = nn.Dropout(cfg.dropout)
        self.out_features = width

    def forward(self, x):
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last or self.cfg.final_activation:
                x = self.dropout(F.relu(x))
        return x


class EngagementRanker(nn.Module):
    def __init__(self, n_dense=24, n_ids=1000, emb_dim=16, n_tasks=3):
        super().__init__()
        self.id_bag = nn.EmbeddingBag(n_ids, emb_dim, mode="mean")
        self.norm = nn.BatchNorm1d(n_dense)
        self.tower = Mlp(MlpConfig(in_features=n_dense + emb_dim, final_activation=True))
        self.heads = nn.Linear(self.tower.out_features, n_tasks)

    def forward(self, dense, ids, offsets):
        feats = torch.cat([self.norm(dense), self.id_bag(ids, offsets)], dim=-1)
        return self.heads(self.tower(feats))


def synthetic_batch(batch=128, n_dense=24, n_ids=1000, n_tasks=3):
    dense = torch.randn(batch, n_dense)
    lengths = torch.randint(1, 6, (batch,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    ids = torch.randint(0, n_ids, (int(lengths.sum()),))
    labels = (torch.rand(batch, n_tasks) < 0.2).float()
    return dense, ids, offsets, labels


def main():
    torch.manual_seed(0)
    model = EngagementRanker().to(device)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    for step in range(30):
        dense, ids, offsets, labels = (t.to(device) for t in synthetic_batch())
        logits = model(dense, ids, offsets)
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("bce", loss.item(), "params", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
