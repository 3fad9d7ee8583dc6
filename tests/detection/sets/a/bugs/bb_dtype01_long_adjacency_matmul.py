# source: https://github.com/archon159/SELOR/issues/8
# area: dtype
# bug: neighbour-label histogram multiplies two int64 tensors (adjacency @ one_hot); works on CPU, but CUDA has no integer matmul ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NUM_NODES, NUM_FEATS, NUM_CLASSES = 40, 8, 4


def build_graph(num_nodes, num_edges=120):
    src = torch.randint(0, num_nodes, (num_edges,))
    dst = torch.randint(0, num_nodes, (num_edges,))
    adj = torch.zeros(num_nodes, num_nodes, dtype=torch.long)
    adj[src, dst] = 1
    adj[dst, src] = 1
    return adj


def neighbor_label_histogram(adj, labels, train_mask, num_classes):
    """Count, for every node, how many labelled neighbours fall into each class."""
    onehot = F.one_hot(labels, num_classes) * train_mask.unsqueeze(1).long()
    counts = adj @ onehot  # expect: any
    deg = counts.sum(dim=1, keepdim=True).clamp(min=1)
    return counts.float() / deg.float()


class LabelAwareGCN(nn.Module):
    def __init__(self, in_dim, hid, num_classes):
        super().__init__()
        self.lin1 = nn.Linear(in_dim + num_classes, hid)
        self.lin2 = nn.Linear(hid, num_classes)

    def forward(self, x, adj_norm, label_feats):
        h = torch.cat([x, label_feats], dim=1)
        h = F.relu(adj_norm @ self.lin1(h))
        return adj_norm @ self.lin2(h)


def normalize_adj(adj):
    a = adj.float() + torch.eye(adj.size(0), device=adj.device)
    d = a.sum(1).pow(-0.5)
    return d.unsqueeze(1) * a * d.unsqueeze(0)


adj = build_graph(NUM_NODES).to(device)
x = torch.randn(NUM_NODES, NUM_FEATS, device=device)
labels = torch.randint(0, NUM_CLASSES, (NUM_NODES,), device=device)
train_mask = torch.rand(NUM_NODES, device=device) < 0.5

model = LabelAwareGCN(NUM_FEATS, 16, NUM_CLASSES).to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
adj_norm = normalize_adj(adj)
label_feats = neighbor_label_histogram(adj, labels, train_mask, NUM_CLASSES)

for epoch in range(20):
    model.train()
    opt.zero_grad()
    out = model(x, adj_norm, label_feats)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    loss.backward()
    opt.step()

model.eval()
with torch.no_grad():
    pred = model(x, adj_norm, label_feats).argmax(1)
    acc = (pred[~train_mask] == labels[~train_mask]).float().mean().item()
print(f"final loss {loss.item():.4f} test acc {acc:.3f}")
