"""A dense-adjacency GCN as the published example shapes it: the loader helper takes the
device and returns tensors on it, a random split is moved with .to(device), and the model
is called with model(*input) on a (features, adjacency) tuple."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim))

    def forward(self, input_tensor, adj_mat):
        return adj_mat @ (input_tensor @ self.kernel) + self.bias


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim)
        self.gc2 = GraphConv(hidden_dim, output_dim)

    def forward(self, input_tensor, adj_mat):
        x = F.relu(self.gc1(input_tensor, adj_mat))
        return F.log_softmax(self.gc2(x, adj_mat), dim=1)


def load_graph(n=40, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 2
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    prob = torch.where(same, torch.tensor(0.25), torch.tensor(0.03))
    adj = (torch.rand(n, n, generator=g) < prob).float()
    adj = ((adj + adj.t()) > 0).float() + torch.eye(n)
    deg_inv_sqrt = adj.sum(1).pow(-0.5)
    adj = deg_inv_sqrt.unsqueeze(1) * adj * deg_inv_sqrt.unsqueeze(0)
    features = torch.randn(n, 5, generator=g) + 0.7 * labels.unsqueeze(1)
    return features.to(device), labels.to(device), adj.to(device)


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--no-accel", action="store_true", help="disables accelerator")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    print(f"Using {device} device")

    features, labels, adj_mat = load_graph(device=device)
    idx = torch.randperm(len(labels)).to(device)
    idx_test, idx_train = idx[:15], idx[15:]
    gcn = GCN(features.shape[1], 16, int(labels.max().item()) + 1).to(device)
    optimizer = Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        gcn.train()
        optimizer.zero_grad()
        output = gcn(*(features, adj_mat))
        loss = criterion(output[idx_train], labels[idx_train])
        loss.backward()
        optimizer.step()
    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f"Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}")
    print(f"final loss {loss_test:.8f}")
