# twin of: bugs/df_dev03_tokenlearner_list.py
# area: device placement
# correct: the per-token attention layers live in an nn.ModuleList, so they are registered submodules that model.to(device) moves and the optimizer trains
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpatialAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(channels, channels // 2, kernel_size=3, padding=1),
            nn.GELU(),
            nn.Conv2d(channels // 2, 1, kernel_size=3, padding=1),
        )

    def forward(self, x):
        weights = torch.sigmoid(self.conv(x))
        return (x * weights).flatten(2).mean(-1)


class TokenLearner(nn.Module):
    def __init__(self, channels, num_tokens=8):
        super().__init__()
        self.num_tokens = num_tokens
        self.tokenizers = nn.ModuleList(SpatialAttention(channels) for _ in range(num_tokens))

    def forward(self, x):
        tokens = [tok(x) for tok in self.tokenizers]
        return torch.stack(tokens, dim=1)


class TokenLearnerClassifier(nn.Module):
    def __init__(self, num_classes=5, dim=32, num_tokens=8):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, dim, kernel_size=4, stride=4),
            nn.BatchNorm2d(dim),
            nn.GELU(),
        )
        self.learner = TokenLearner(dim, num_tokens)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
        feats = self.stem(images)
        tokens = self.learner(feats)
        tokens = self.encoder(tokens)
        return self.head(tokens.mean(dim=1))


class ShapesDataset(torch.utils.data.Dataset):
    def __init__(self, n=96, num_classes=5, size=32):
        g = torch.Generator().manual_seed(1)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        self.images = torch.randn(n, 3, size, size, generator=g)
        for i, c in enumerate(self.labels.tolist()):
            self.images[i, c % 3, : 4 + 4 * c, : 4 + 4 * c] += 2.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TokenLearnerClassifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    loader = torch.utils.data.DataLoader(ShapesDataset(), batch_size=32, shuffle=True)
    for epoch in range(2):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: loss {(epoch_loss / len(loader)).item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
