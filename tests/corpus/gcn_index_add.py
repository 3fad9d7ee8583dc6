"""A two-layer GCN on a synthetic two-community graph held as an edge-index tensor.

Self loops and symmetric degree normalisation come from module-level helpers that build
their tensors from scratch; messages are summed with index_add_; the model is called as
model(*inputs) with inputs a (features, edge_index) tuple.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam


def make_graph(n_per_class, p_in, p_out, rng):
    n = 2 * n_per_class
    labels = np.repeat([0, 1], n_per_class)
    src, dst = [], []
    for i in range(n):
        for j in range(i + 1, n):
            p = p_in if labels[i] == labels[j] else p_out
            if rng.random() < p:
                src += [i, j]
                dst += [j, i]
    edge_index = torch.tensor([src, dst], dtype=torch.long)
    features = torch.from_numpy(rng.normal(size=(n, 6)).astype(np.float32))
    features[:, 0] += torch.from_numpy(labels.astype(np.float32)) * 0.8
    return features, edge_index, torch.from_numpy(labels)


def add_self_loops(edge_index, num_nodes):
    loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


def gcn_norm(edge_index, num_nodes):
    row, col = edge_index
    deg = torch.zeros(num_nodes).index_add_(0, col, torch.ones(col.size(0)))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
    return deg_inv_sqrt[row] * deg_inv_sqrt[col]


class GraphConv(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x, edge_index):
        num_nodes = x.size(0)
        edge_index = add_self_loops(edge_index, num_nodes)
        norm = gcn_norm(edge_index, num_nodes)
        h = self.linear(x)
        row, col = edge_index
        out = torch.zeros_like(h)
        out.index_add_(0, col, h[row] * norm.unsqueeze(1))
        return out + self.bias


class GCN(nn.Module):
    def __init__(self, in_dim, hidden_dim, n_classes):
        super().__init__()
        self.conv1 = GraphConv(in_dim, hidden_dim)
        self.conv2 = GraphConv(hidden_dim, n_classes)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def train_iter(model, optimizer, criterion, inputs, target, mask):
    model.train()
    optimizer.zero_grad()
    output = model(*inputs)
    loss = criterion(output[mask], target[mask])
    loss.backward()
    optimizer.step()
    return loss.item()


def test(model, criterion, inputs, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*inputs)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="GCN on a planted-partition graph")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden-dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    features, edge_index, labels = make_graph(30, 0.2, 0.02, rng)
    idx = torch.randperm(len(labels))
    train_mask, test_mask = idx[:20], idx[20:]
    model = GCN(features.shape[1], args.hidden_dim, int(labels.max()) + 1)
    optimizer = Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        loss = train_iter(model, optimizer, criterion, (features, edge_index), labels, train_mask)
    test_loss, test_acc = test(model, criterion, (features, edge_index), labels, test_mask)
    print(f"Test set results: loss {test_loss:.4f} accuracy {test_acc:.4f}")
    print(f"final loss {test_loss:.8f}")
