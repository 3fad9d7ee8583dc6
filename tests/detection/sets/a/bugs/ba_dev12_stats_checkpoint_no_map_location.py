# source: https://github.com/LemuelPuglisi/BrLP/pull/3
# area: device placement
# bug: the normalisation/prototype file written by the CPU preprocessing step is torch.load-ed without map_location, so its tensors come back on the CPU and are mixed with GPU features
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def preprocess(features, labels, n_classes, path):
    """Offline step (runs on the data-prep box): feature stats + class prototypes."""
    mean, std = features.mean(0), features.std(0).clamp(min=1e-6)
    z = (features - mean) / std
    protos = torch.stack([z[labels == c].mean(0) for c in range(n_classes)])
    torch.save({"mean": mean, "std": std, "prototypes": protos}, path)


class ProtoNet(nn.Module):
    def __init__(self, dim, emb=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, emb))

    def forward(self, x):
        return self.enc(x)


def proto_logits(model, x, stats):
    z = (x - stats["mean"]) / stats["std"]  # expect[stats]: any
    emb = model(z)
    proto_emb = model(stats["prototypes"])  # expect[stats]: any
    return -torch.cdist(emb, proto_emb)


def main():
    n_classes, dim = 4, 12
    feats = torch.randn(400, dim) * 3 + 5
    labels = (feats[:, :n_classes]).argmax(1)
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, "stats.pt")
        preprocess(feats, labels, n_classes, stats_path)

        stats = torch.load(stats_path)  # expect[stats]: any
        model = ProtoNet(dim).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for epoch in range(4):
            perm = torch.randperm(400)
            for i in range(0, 400, 50):
                idx = perm[i:i + 50]
                x, y = feats[idx].to(device), labels[idx].to(device)
                loss = F.cross_entropy(proto_logits(model, x, stats), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
