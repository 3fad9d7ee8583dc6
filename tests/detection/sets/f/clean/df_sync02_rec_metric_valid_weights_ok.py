# twin of: bugs/df_sync02_rec_metric_valid_weights.py
# area: transfer & sync
# correct: the metric update accumulates unconditionally on the device (zero-weight rows add nothing), so no per-step host sync
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class NormalizedEntropyMetric:
    """Windowless multi-task NE metric, updated once per training batch."""

    def __init__(self, n_tasks, device, eta=1e-12):
        self.n_tasks = n_tasks
        self.eta = eta
        self.cross_entropy_sum = torch.zeros(n_tasks, dtype=torch.float64, device=device)
        self.weighted_num_samples = torch.zeros(n_tasks, dtype=torch.float64, device=device)
        self.pos_labels = torch.zeros(n_tasks, dtype=torch.float64, device=device)
        self.neg_labels = torch.zeros(n_tasks, dtype=torch.float64, device=device)

    def update(self, predictions, labels, weights):
        p = predictions.clamp(self.eta, 1 - self.eta).double()
        lab = labels.double()
        w = weights.double()
        ce = -(lab * torch.log2(p) + (1 - lab) * torch.log2(1 - p))
        self.cross_entropy_sum += (w * ce).sum(-1)
        self.weighted_num_samples += w.sum(-1)
        self.pos_labels += (w * lab).sum(-1)
        self.neg_labels += (w * (1 - lab)).sum(-1)

    def compute(self):
        mean_label = self.pos_labels / self.weighted_num_samples.clamp_min(self.eta)
        base_ce = -(mean_label * torch.log2(mean_label.clamp_min(self.eta))
                    + (1 - mean_label) * torch.log2((1 - mean_label).clamp_min(self.eta)))
        ne = self.cross_entropy_sum / self.weighted_num_samples.clamp_min(self.eta) / base_ce.clamp_min(self.eta)
        return ne.tolist()


class TwoTowerRanker(nn.Module):
    def __init__(self, n_dense=13, emb_rows=1000, emb_dim=16, n_tasks=2):
        super().__init__()
        self.emb = nn.EmbeddingBag(emb_rows, emb_dim, mode="sum")
        self.dense = nn.Sequential(nn.Linear(n_dense, 32), nn.ReLU())
        self.head = nn.Linear(32 + emb_dim, n_tasks)

    def forward(self, dense, sparse_ids, offsets):
        return self.head(torch.cat([self.dense(dense), self.emb(sparse_ids, offsets)], dim=-1))


def synthetic_batch(batch_size, n_tasks):
    dense = torch.randn(batch_size, 13, device=device)
    ids = torch.randint(0, 1000, (batch_size * 4,), device=device)
    offsets = torch.arange(0, batch_size * 4, 4, device=device)
    labels = torch.randint(0, 2, (batch_size, n_tasks), device=device).float()
    weights = torch.ones(n_tasks, batch_size, device=device)
    return dense, ids, offsets, labels, weights


def train(steps=60, batch_size=256, n_tasks=2):
    model = TwoTowerRanker(n_tasks=n_tasks).to(device)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    metric = NormalizedEntropyMetric(n_tasks, device)
    for step in range(steps):
        dense, ids, offsets, labels, weights = synthetic_batch(batch_size, n_tasks)
        logits = model(dense, ids, offsets)
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            metric.update(torch.sigmoid(logits).t(), labels.t(), weights)
    ne = metric.compute()
    print("NE per task:", [round(v, 4) for v in ne], "finite:", all(math.isfinite(v) for v in ne))


if __name__ == "__main__":
    torch.manual_seed(0)
    train()
