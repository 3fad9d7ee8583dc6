# twin of: bugs/dj_sync03_dlrm_triu_indices.py
# area: transfer & sync
# correct: the index tensor is a non-persistent buffer, so model.to(device) moves it once and forward uses it in place
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SparseArch(nn.Module):
    def __init__(self, num_embeddings, num_features, dim):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(num_embeddings, dim) for _ in range(num_features))

    def forward(self, sparse_ids):
        return torch.stack([t(sparse_ids[:, i]) for i, t in enumerate(self.tables)], dim=1)


class InteractionArch(nn.Module):
    def __init__(self, num_sparse_features):
        super().__init__()
        self.F = num_sparse_features
        self.register_buffer(
            "triu_indices", torch.triu_indices(self.F + 1, self.F + 1, offset=1), persistent=False
        )

    @property
    def output_dim(self):
        return (self.F + 1) * self.F // 2

    def forward(self, dense, sparse):
        combined = torch.cat((dense.unsqueeze(1), sparse), dim=1)
        interactions = torch.bmm(combined, combined.transpose(1, 2))
        idx = self.triu_indices
        flat = interactions[:, idx[0], idx[1]]
        return torch.cat((dense, flat), dim=1)


class DLRM(nn.Module):
    def __init__(self, num_dense, num_sparse, num_embeddings=1000, dim=16):
        super().__init__()
        self.dense_arch = nn.Sequential(nn.Linear(num_dense, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        self.sparse_arch = SparseArch(num_embeddings, num_sparse, dim)
        self.inter_arch = InteractionArch(num_sparse)
        self.over_arch = nn.Sequential(
            nn.Linear(dim + self.inter_arch.output_dim, 64), nn.ReLU(), nn.Linear(64, 1)
        )

    def forward(self, dense, sparse_ids):
        d = self.dense_arch(dense)
        s = self.sparse_arch(sparse_ids)
        return self.over_arch(self.inter_arch(d, s)).squeeze(1)


def synthetic_clicks(n=1024, num_dense=13, num_sparse=8, num_embeddings=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(n, num_dense, generator=g)
    sparse = torch.randint(0, num_embeddings, (n, num_sparse), generator=g)
    logits = dense[:, 0] - 0.5 * dense[:, 1] + (sparse[:, 0] % 7 == 0).float()
    labels = (torch.rand(n, generator=g) < torch.sigmoid(logits)).float()
    return dense, sparse, labels


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dense, sparse, labels = synthetic_clicks()
    loader = DataLoader(TensorDataset(dense, sparse, labels), batch_size=256, shuffle=True)
    model = DLRM(num_dense=13, num_sparse=8).to(device)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()

    for epoch in range(2):
        running = torch.zeros((), device=device)
        for d, s, y in loader:
            d, s, y = d.to(device), s.to(device), y.to(device)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(d, s), y)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch}: mean bce {(running / len(loader)).item():.4f}")


if __name__ == "__main__":
    main()
