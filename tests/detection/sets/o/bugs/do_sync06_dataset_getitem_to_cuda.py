# source: https://github.com/DeepRank/deeprank2/pull/142
# area: transfer & sync
# bug: the graph dataset copies every sample's arrays to the CUDA device inside __getitem__, so each item pays small synchronous pageable copies on the main process and the loader can use neither workers nor pinned memory
import os
import tempfile
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def write_interface_graphs(path, n_graphs=96, n_feats=12, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {}
    for g in range(n_graphs):
        n = int(rng.integers(8, 24))
        e = int(rng.integers(n, 3 * n))
        arrays[f"{g:04d}/node_feats"] = rng.normal(size=(n, n_feats)).astype(np.float32)
        arrays[f"{g:04d}/edge_index"] = rng.integers(0, n, size=(2, e)).astype(np.int64)
        arrays[f"{g:04d}/target"] = np.array([rng.normal()], dtype=np.float32)
    np.savez(path, **arrays)


class InterfaceGraphDataset(Dataset):
    def __init__(self, path, device):
        self.archive = np.load(path)
        self.ids = sorted({k.split("/")[0] for k in self.archive.files})
        self.device = device

    def __len__(self):
        return len(self.ids)

    def _tensor(self, array, dtype):
        return torch.as_tensor(array, dtype=dtype, device=self.device)  # expect: any

    def __getitem__(self, idx):
        key = self.ids[idx]
        x = self._tensor(self.archive[f"{key}/node_feats"], torch.float32)
        edge_index = self._tensor(self.archive[f"{key}/edge_index"], torch.long)
        y = self._tensor(self.archive[f"{key}/target"], torch.float32)
        return x, edge_index, y


def collate_graphs(samples):
    xs, edges, ys, batch, offset = [], [], [], [], 0
    for gi, (x, e, y) in enumerate(samples):
        xs.append(x)
        edges.append(e + offset)
        ys.append(y)
        batch.append(torch.full((x.shape[0],), gi, dtype=torch.long, device=x.device))
        offset += x.shape[0]
    return torch.cat(xs), torch.cat(edges, dim=1), torch.cat(ys), torch.cat(batch), len(samples)


class GraphRegressor(nn.Module):
    def __init__(self, n_feats, hidden=48, layers=2):
        super().__init__()
        self.inp = nn.Linear(n_feats, hidden)
        self.convs = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x, edge_index, batch, num_graphs):
        h = torch.relu(self.inp(x))
        src, dst = edge_index
        for conv in self.convs:
            agg = torch.zeros_like(h).index_add_(0, dst, h[src])
            h = torch.relu(conv(torch.cat([h, agg], dim=-1)))
        pooled = torch.zeros(num_graphs, h.shape[1], device=h.device).index_add_(0, batch, h)
        return self.head(pooled).squeeze(-1)


def train(model, loader, device, epochs=3):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for x, edge_index, y, batch, num_graphs in loader:
            pred = model(x, edge_index, batch, num_graphs)
            loss = nn.functional.mse_loss(pred, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: mse {(total / len(loader)).item():.4f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "interfaces.npz")
        write_interface_graphs(path)
        dataset = InterfaceGraphDataset(path, device)
        loader = DataLoader(dataset, batch_size=16, shuffle=True, collate_fn=collate_graphs)
        model = GraphRegressor(n_feats=12).to(device)
        train(model, loader, device)


if __name__ == "__main__":
    main()
