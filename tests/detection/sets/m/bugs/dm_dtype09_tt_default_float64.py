# source: https://github.com/rballester/tntorch/issues/4
# area: dtype
# bug: the tensor-train helper switches the global default dtype to float64, so the recommender model and every batch built afterwards live on the GPU in float64, which is many times slower than float32 and doubles memory
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.set_default_dtype(torch.float64)  # expect: any


class TTCompressor:
    """Tensor-train factorisation of a (rows x cols) matrix reshaped into a 4-way tensor."""

    def __init__(self, shape, rank):
        self.shape = shape
        self.rank = rank

    def decompose(self, matrix):
        t = matrix.reshape(self.shape)
        cores, r_prev = [], 1
        for k in range(len(self.shape) - 1):
            t = t.reshape(r_prev * self.shape[k], -1)
            u, s, vh = torch.linalg.svd(t, full_matrices=False)
            r = min(self.rank, s.numel())
            cores.append(u[:, :r].reshape(r_prev, self.shape[k], r))
            t = s[:r, None] * vh[:r]
            r_prev = r
        cores.append(t.reshape(r_prev, self.shape[-1], 1))
        return cores

    def reconstruct(self, cores):
        out = cores[0]
        for core in cores[1:]:
            out = torch.tensordot(out, core, dims=([out.dim() - 1], [0]))
        return out.reshape(-1)


class InteractionDataset(Dataset):
    def __init__(self, num_users, num_items, n=2048, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.users = torch.randint(0, num_users, (n,), generator=g)
        self.items = torch.randint(0, num_items, (n,), generator=g)
        self.ratings = torch.rand(n, generator=g) * 4 + 1

    def __len__(self):
        return self.users.numel()

    def __getitem__(self, i):
        return self.users[i], self.items[i], self.ratings[i]


class FactorizationModel(nn.Module):
    def __init__(self, num_users, num_items, dim=64):
        super().__init__()
        self.user = nn.Embedding(num_users, dim)
        self.item = nn.Embedding(num_items, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.user(u), self.item(i)], dim=1)).squeeze(-1)


def compressed_init(model, compressor):
    with torch.no_grad():
        w = model.item.weight
        cores = compressor.decompose(w.detach().cpu())
        w.copy_(compressor.reconstruct(cores).reshape(w.shape))


def train(device, epochs=1):
    num_users, num_items = 1000, 256
    model = FactorizationModel(num_users, num_items).to(device)
    compressed_init(model, TTCompressor((16, 16, 8, 8), rank=8))
    loader = DataLoader(InteractionDataset(num_users, num_items), batch_size=256, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    total = torch.zeros((), device=device)
    for _ in range(epochs):
        for u, i, r in loader:
            u, i, r = u.to(device), i.to(device), r.to(device)
            loss = loss_fn(model(u, i), r)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
    return total / (epochs * len(loader))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    print("mean train loss", float(train(device)))
