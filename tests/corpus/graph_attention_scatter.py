"""A graph attention network: per-edge scores normalised with a scatter-based softmax.

The edge list is a module-level tensor built from a Python list; node features come from
NumPy; the segment softmax helper makes its buffers with torch.zeros and scatter_add_.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

RING = 24
EDGES = [(i, (i + 1) % RING) for i in range(RING)] + [(i, (i + 2) % RING) for i in range(RING)]
SELF_LOOPS = [(i, i) for i in range(RING)]
EDGE_INDEX = torch.tensor(
    EDGES + [(b, a) for a, b in EDGES] + SELF_LOOPS, dtype=torch.long
).t().contiguous()


def segment_softmax(scores, index, num_segments):
    seg_max = torch.zeros(num_segments).scatter_reduce(
        0, index, scores, reduce="amax", include_self=False
    )
    exp = torch.exp(scores - seg_max[index])
    denom = torch.zeros(num_segments).scatter_add_(0, index, exp)
    return exp / (denom[index] + 1e-16)


class GATLayer(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.W = nn.Linear(in_dim, out_dim, bias=False)
        self.att_src = nn.Parameter(torch.randn(out_dim) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(out_dim) * 0.1)

    def forward(self, x, edge_index):
        h = self.W(x)
        src, dst = edge_index
        scores = F.leaky_relu((h[src] * self.att_src).sum(-1) + (h[dst] * self.att_dst).sum(-1), 0.2)
        alpha = segment_softmax(scores, dst, x.size(0))
        out = torch.zeros(x.size(0), h.size(1))
        out = out.scatter_add(0, dst.unsqueeze(-1).expand(-1, h.size(1)), h[src] * alpha.unsqueeze(-1))
        return out


class GAT(nn.Module):
    def __init__(self, in_dim, hidden, classes):
        super().__init__()
        self.layer1 = GATLayer(in_dim, hidden)
        self.layer2 = GATLayer(hidden, classes)

    def forward(self, x, edge_index):
        return self.layer2(F.elu(self.layer1(x, edge_index)), edge_index)


def main():
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    labels = torch.tensor([(i // 6) % 2 for i in range(RING)])
    x = torch.from_numpy(rng.normal(size=(RING, 5)).astype(np.float32)) + labels.unsqueeze(1) * 0.8
    train_idx = torch.arange(0, RING, 2)
    val_idx = torch.arange(1, RING, 2)
    model = GAT(5, 8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for epoch in range(30):
        optimizer.zero_grad()
        out = model(x, EDGE_INDEX)
        loss = F.cross_entropy(out[train_idx], labels[train_idx])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x, EDGE_INDEX)[val_idx], labels[val_idx])
    print(f"final loss {val_loss.item():.8f}")


if __name__ == "__main__":
    main()
