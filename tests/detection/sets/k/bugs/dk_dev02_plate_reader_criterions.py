# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2468
# area: device placement
# bug: the per-position weighted CrossEntropyLoss objects live in a plain Python list, so model.to(device) never moves their class-weight tensors and the loss fails on the GPU
import string

import torch
import torch.nn as nn

ALPHABET = string.digits + string.ascii_uppercase + "-"


class PlateReader(nn.Module):
    def __init__(self, n_positions, letter_freqs_per_position):
        super().__init__()
        n_chars = len(ALPHABET)
        self.n_positions = n_positions
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, n_positions)),
        )
        self.heads = nn.ModuleList(nn.Linear(32, n_chars) for _ in range(n_positions))
        self.criterions = []  # expect[w]: any
        for freqs in letter_freqs_per_position:
            weight = 1.0 / (freqs + 1.0)
            weight = weight * n_chars / weight.sum()
            self.criterions.append(nn.CrossEntropyLoss(weight=weight))  # expect[w]: any

    def forward(self, images):
        feats = self.backbone(images).squeeze(2)
        return torch.stack([head(feats[:, :, i]) for i, head in enumerate(self.heads)], dim=1)

    def compute_loss(self, logits, targets):
        losses = [self.criterions[i](logits[:, i], targets[:, i]) for i in range(self.n_positions)]
        return torch.stack(losses).sum(), losses


def label_statistics(labels, n_positions):
    n_chars = len(ALPHABET)
    return [torch.bincount(labels[:, p], minlength=n_chars).float() for p in range(n_positions)]


def make_dataset(n, n_positions):
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, len(ALPHABET), (n, n_positions), generator=g)
    images = torch.randn(n, 1, 24, 96, generator=g)
    return images, labels


def validate(model, images, labels, device, batch_size=32):
    model.eval()
    correct = torch.zeros((), device=device)
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            x = images[start:start + batch_size].to(device)
            y = labels[start:start + batch_size].to(device)
            pred = model(x).argmax(-1)
            correct += (pred == y).all(dim=1).sum()
    model.train()
    return correct / len(images)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_positions = 7
    images, labels = make_dataset(160, n_positions)
    freqs = label_statistics(labels, n_positions)
    model = PlateReader(n_positions, freqs).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)

    for epoch in range(2):
        perm = torch.randperm(len(images))
        epoch_loss = torch.zeros((), device=device)
        for start in range(0, len(images), 32):
            idx = perm[start:start + 32]
            x, y = images[idx].to(device), labels[idx].to(device)
            loss, _ = model.compute_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        acc = validate(model, images, labels, device)
        print(f"epoch {epoch} loss {epoch_loss.item():.3f} plate acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
