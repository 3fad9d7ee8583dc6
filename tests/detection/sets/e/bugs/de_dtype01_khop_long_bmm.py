# source: https://github.com/pytorch/pytorch/issues/20897
# area: dtype
# bug: k-hop path counts are computed with torch.bmm on int64 adjacency tensors, which has no CUDA kernel ("bmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MoleculeBatch:
    def __init__(self, num_graphs=8, max_nodes=12, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.adj = torch.zeros(num_graphs, max_nodes, max_nodes, dtype=torch.long)
        self.labels = torch.randint(0, 2, (num_graphs,), generator=g)
        for b in range(num_graphs):
            n = int(torch.randint(5, max_nodes + 1, (1,), generator=g))
            for i in range(1, n):
                j = int(torch.randint(0, i, (1,), generator=g))
                self.adj[b, i, j] = 1
                self.adj[b, j, i] = 1
        self.node_feats = torch.randn(num_graphs, max_nodes, 6, generator=g)

    def to(self, dev):
        self.adj = self.adj.to(dev)
        self.labels = self.labels.to(dev)
        self.node_feats = self.node_feats.to(dev)
        return self


class PathCountFeaturizer:
    """Counts walks of length 1..k between node pairs as structural features."""

    def __init__(self, max_hops=3):
        self.max_hops = max_hops

    def __call__(self, adj):
        feats = []
        walk = adj
        for _ in range(self.max_hops):
            feats.append(walk.sum(dim=-1))
            walk = torch.bmm(walk, adj)  # expect: any
        return torch.stack(feats, dim=-1).float()


class GraphClassifier(nn.Module):
    def __init__(self, in_dim, hops, hidden=32):
        super().__init__()
        self.node_mlp = nn.Sequential(nn.Linear(in_dim + hops, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 2)

    def forward(self, node_feats, path_feats, adj):
        h = self.node_mlp(torch.cat([node_feats, torch.log1p(path_feats)], dim=-1))
        h = h + torch.bmm(adj.float(), h) / adj.sum(-1, keepdim=True).clamp(min=1).float()
        return self.head(h.mean(dim=1))


def train(epochs=5):
    featurizer = PathCountFeaturizer(max_hops=3)
    model = GraphClassifier(6, 3).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    batches = [MoleculeBatch(seed=s).to(device) for s in range(4)]
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for batch in batches:
            path_feats = featurizer(batch.adj)
            logits = model(batch.node_feats, path_feats, batch.adj)
            loss = nn.functional.cross_entropy(logits, batch.labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch} loss {(total / len(batches)).item():.4f}")


if __name__ == "__main__":
    train()
