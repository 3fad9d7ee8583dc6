# source: https://github.com/NVIDIA/apex/issues/455
# area: dtype
# bug: the readout buffer is allocated as float32 while under CUDA autocast the node features are float16; index_add_ rejects a Half source into a Float tensor
import torch
import torch.nn as nn
import torch.nn.functional as F


def global_add_pool(x, batch, num_graphs):
    out = torch.zeros(num_graphs, x.size(-1), device=x.device)  # expect[pool]: any
    out.index_add_(0, batch, x)  # expect[pool]: any
    return out


def scatter_mean_neighbors(x, edge_index):
    src, dst = edge_index
    agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
    deg = torch.bincount(dst, minlength=x.size(0)).clamp(min=1).unsqueeze(-1)
    return agg / deg.to(agg.dtype)


class GraphConv(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.self_lin = nn.Linear(dim_in, dim_out)
        self.nbr_lin = nn.Linear(dim_in, dim_out)

    def forward(self, x, edge_index):
        return F.relu(self.self_lin(x) + self.nbr_lin(scatter_mean_neighbors(x, edge_index)))


class MoleculeNet(nn.Module):
    def __init__(self, atom_types=16, hidden=64, num_tasks=3):
        super().__init__()
        self.embed = nn.Embedding(atom_types, hidden)
        self.convs = nn.ModuleList([GraphConv(hidden, hidden) for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, num_tasks))

    def forward(self, atoms, edge_index, batch, num_graphs):
        x = self.embed(atoms)
        for conv in self.convs:
            x = conv(x, edge_index)
        return self.head(global_add_pool(x, batch, num_graphs))


def random_batch(num_graphs=32, gen=None):
    atoms, edges, batch, offset = [], [], [], 0
    for g in range(num_graphs):
        n = int(torch.randint(5, 20, (1,), generator=gen))
        atoms.append(torch.randint(0, 16, (n,), generator=gen))
        src = torch.arange(n - 1)
        ring = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])]) + offset
        edges.append(ring)
        batch.append(torch.full((n,), g))
        offset += n
    y = torch.randn(num_graphs, 3, generator=gen)
    return torch.cat(atoms), torch.cat(edges, 1), torch.cat(batch), y


def train(epochs=2, steps=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = MoleculeNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(epochs):
        for _ in range(steps):
            atoms, edge_index, batch, y = (t.to(device) for t in random_batch(gen=gen))
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                pred = model(atoms, edge_index, batch, y.size(0))
                loss = F.mse_loss(pred.float(), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
