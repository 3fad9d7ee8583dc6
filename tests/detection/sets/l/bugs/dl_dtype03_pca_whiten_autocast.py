# source: https://github.com/pytorch/pytorch/issues/99710
# area: dtype
# bug: torch.pca_lowrank is called inside the CUDA autocast region; its internal matmul is downcast to float16 and linalg.qr has no Half kernel on CUDA ("geqrf_cuda" not implemented for 'Half')
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Encoder(nn.Module):
    def __init__(self, in_dim=32, hidden=128, out_dim=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.GELU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, x):
        return self.net(x)


class PCAWhitener:
    def __init__(self, k, eps=1e-5):
        self.k = k
        self.eps = eps
        self.mean = None
        self.proj = None

    def fit(self, feats):
        feats = feats.float()
        self.mean = feats.mean(dim=0, keepdim=True)
        _, s, v = torch.pca_lowrank(feats, q=self.k, center=True)  # expect[w]: any
        scale = (s / (feats.shape[0] - 1) ** 0.5).clamp_min(self.eps)
        self.proj = v[:, : self.k] / scale[: self.k]
        return self

    def transform(self, feats):
        return (feats.float() - self.mean) @ self.proj


def make_split(n, in_dim=32, num_classes=4, seed=0):
    centers = torch.randn(num_classes, in_dim, generator=torch.Generator().manual_seed(123)) * 2.0
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (n,), generator=g)
    x = centers[y] + torch.randn(n, in_dim, generator=g)
    return TensorDataset(x, y)


@torch.no_grad()
def embed_and_whiten(encoder, loader, device, use_amp, k, whitener=None):
    encoder.eval()
    chunks, labels = [], []
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        for x, y in loader:
            chunks.append(encoder(x.to(device)))
            labels.append(y.to(device))
        feats = torch.cat(chunks)
        if whitener is None:
            whitener = PCAWhitener(k).fit(feats)  # expect[w]: any
        z = whitener.transform(feats)
    return F.normalize(z, dim=1), torch.cat(labels), whitener


def knn_accuracy(train_z, train_y, test_z, test_y, k=5):
    sims = test_z @ train_z.T
    idx = sims.topk(k, dim=1).indices
    votes = F.one_hot(train_y[idx], num_classes=int(train_y.max()) + 1).sum(dim=1)
    return (votes.argmax(dim=1) == test_y).float().mean()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    encoder = Encoder().to(device)
    train_loader = DataLoader(make_split(512, seed=1), batch_size=128)
    test_loader = DataLoader(make_split(128, seed=2), batch_size=128)
    tr_z, tr_y, whitener = embed_and_whiten(encoder, train_loader, device, use_amp, k=16)
    te_z, te_y, _ = embed_and_whiten(encoder, test_loader, device, use_amp, k=16, whitener=whitener)
    acc = knn_accuracy(tr_z, tr_y, te_z, te_y)
    print(f"kNN accuracy on whitened features: {acc.item():.3f}")


if __name__ == "__main__":
    main()
