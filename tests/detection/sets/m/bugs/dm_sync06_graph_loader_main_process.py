# source: https://github.com/pyg-team/pytorch_geometric/issues/811
# area: transfer & sync
# bug: the graph loaders do all per-graph preprocessing and collation in the main process (no workers, no pinned memory), so the GPU sits idle waiting for each batch
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RelationalGraphDataset(Dataset):
    def __init__(self, n_graphs, n_feats=16, n_rel=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.graphs = []
        for _ in range(n_graphs):
            n = int(torch.randint(10, 30, (1,), generator=g))
            e = n * 3
            edge_index = torch.randint(0, n, (2, e), generator=g)
            edge_type = torch.randint(0, n_rel, (e,), generator=g)
            x = torch.randn(n, n_feats, generator=g)
            y = int(x[:, 0].mean() > 0)
            self.graphs.append((x, edge_index, edge_type, y))

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, idx):
        x, edge_index, edge_type, y = self.graphs[idx]
        deg = torch.zeros(x.size(0)).index_add_(0, edge_index[1], torch.ones(edge_index.size(1)))
        norm = 1.0 / deg.clamp(min=1)[edge_index[1]]
        return x, edge_index, edge_type, norm, y


def collate_graphs(items):
    xs, eis, ets, norms, ys, batch = [], [], [], [], [], []
    offset = 0
    for gid, (x, ei, et, nm, y) in enumerate(items):
        xs.append(x)
        eis.append(ei + offset)
        ets.append(et)
        norms.append(nm)
        ys.append(y)
        batch.append(torch.full((x.size(0),), gid, dtype=torch.long))
        offset += x.size(0)
    return (torch.cat(xs), torch.cat(eis, 1), torch.cat(ets), torch.cat(norms),
            torch.cat(batch), torch.tensor(ys))


class RGCN(nn.Module):
    def __init__(self, n_feats, hidden, n_rel, n_layers=2):
        super().__init__()
        self.inp = nn.Linear(n_feats, hidden)
        self.rel = nn.ModuleList(nn.Linear(hidden, hidden * n_rel, bias=False) for _ in range(n_layers))
        self.n_rel, self.hidden = n_rel, hidden
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, edge_index, edge_type, norm, batch, n_graphs):
        h = F.relu(self.inp(x))
        src, dst = edge_index
        for lin in self.rel:
            msg = lin(h).view(-1, self.n_rel, self.hidden)[src, edge_type] * norm.unsqueeze(1)
            h = F.relu(h + torch.zeros_like(h).index_add_(0, dst, msg))
        pooled = torch.zeros(n_graphs, self.hidden, device=h.device).index_add_(0, batch, h)
        counts = torch.zeros(n_graphs, device=h.device).index_add_(0, batch, torch.ones_like(batch, dtype=h.dtype))
        return self.out(pooled / counts.unsqueeze(1))


def run_epoch(model, loader, optimizer=None):
    train = optimizer is not None
    model.train(train)
    total_loss = torch.zeros((), device=device)
    for x, ei, et, nm, batch, y in loader:
        x, ei, et, nm, batch, y = (t.to(device) for t in (x, ei, et, nm, batch, y))
        with torch.set_grad_enabled(train):
            loss = F.cross_entropy(model(x, ei, et, nm, batch, y.numel()), y)
        if train:
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        total_loss += loss.detach()
    return (total_loss / len(loader)).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    train_dataset = RelationalGraphDataset(1500)
    test_dataset = RelationalGraphDataset(300, seed=1)
    train_loader = DataLoader(train_dataset, batch_size=128, shuffle=True, collate_fn=collate_graphs)  # expect[w]: any
    test_loader = DataLoader(test_dataset, batch_size=128, collate_fn=collate_graphs)  # expect[w]: any
    model = RGCN(16, 64, 4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        tr = run_epoch(model, train_loader, optimizer)
        te = run_epoch(model, test_loader)
        print(f"epoch {epoch}: train {tr:.4f} test {te:.4f}")
