# source: https://github.com/pyg-team/pytorch_geometric/issues/8817
# area: device placement
# bug: the node mask used to induce a subgraph is allocated on the CPU while edge_index and the seed subset live on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def induced_subgraph(subset, edge_index, num_nodes):
    node_mask = torch.zeros(num_nodes, dtype=torch.bool)  # expect: any
    node_mask[subset] = True
    edge_mask = node_mask[edge_index[0]] & node_mask[edge_index[1]]
    relabel = torch.cumsum(node_mask.long(), dim=0) - 1
    sub_edges = edge_index[:, edge_mask]
    return relabel[sub_edges], node_mask


def one_hop(seeds, edge_index):
    hit = torch.isin(edge_index[1], seeds)
    return torch.unique(torch.cat([seeds, edge_index[0, hit]]))


class MeanConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin_self = nn.Linear(d_in, d_out)
        self.lin_nbr = nn.Linear(d_in, d_out)

    def forward(self, x, edge_index):
        src, dst = edge_index
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(x.size(0), device=x.device).index_add_(
            0, dst, torch.ones_like(dst, dtype=x.dtype))
        agg = agg / deg.clamp(min=1).unsqueeze(-1)
        return self.lin_self(x) + self.lin_nbr(agg)


class NodeClassifier(nn.Module):
    def __init__(self, d_in, hidden, n_cls):
        super().__init__()
        self.c1 = MeanConv(d_in, hidden)
        self.c2 = MeanConv(hidden, n_cls)

    def forward(self, x, edge_index):
        return self.c2(F.relu(self.c1(x, edge_index)), edge_index)


def make_graph(n=400, e=2400, d=16, n_cls=4):
    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, n, (2, e), generator=g)
    x = torch.randn(n, d, generator=g)
    y = torch.randint(0, n_cls, (n,), generator=g)
    return x, edge_index, y


def main():
    x, edge_index, y = make_graph()
    x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
    num_nodes = x.size(0)
    model = NodeClassifier(16, 32, 4).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(20):
        seeds = torch.randint(0, num_nodes, (32,), device=device)
        subset = one_hop(seeds, edge_index)
        sub_edges, _ = induced_subgraph(subset, edge_index, num_nodes)
        logits = model(x[subset], sub_edges)
        loss = F.cross_entropy(logits, y[subset])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
