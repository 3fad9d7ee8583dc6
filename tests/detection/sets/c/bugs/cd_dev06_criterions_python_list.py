# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2984
# area: device placement
# bug: the per-position weighted CrossEntropyLoss modules are kept in a plain Python list, so model.to(device) never moves their weight tensors and the loss mixes CPU weights with CUDA logits
import torch
import torch.nn as nn
import torch.nn.functional as F


class PlateRecognizer(nn.Module):
    def __init__(self, alphabet_size, max_len, letter_weights_per_position):
        super().__init__()
        self.max_len = max_len
        self.alphabet_size = alphabet_size
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, max_len)),
        )
        self.head = nn.Linear(32, alphabet_size)
        self.criterions = []  # expect[w]: any
        for weight in letter_weights_per_position:
            self.criterions.append(nn.CrossEntropyLoss(weight=weight))  # expect[w]: any

    def forward(self, images):
        feats = self.encoder(images).squeeze(2).transpose(1, 2)
        return self.head(feats)

    def compute_loss(self, logits, targets):
        losses = [crit(logits[:, i, :], targets[:, i]) for i, crit in enumerate(self.criterions)]
        return torch.stack(losses).sum(), losses


def estimate_position_weights(targets, alphabet_size):
    weights = []
    for pos in range(targets.size(1)):
        counts = torch.bincount(targets[:, pos], minlength=alphabet_size).float()
        w = counts.sum() / (alphabet_size * counts.clamp_min(1.0))
        weights.append(w / w.mean())
    return weights


def train_epoch(model, loader, optimizer, device):
    model.train()
    total = torch.zeros((), device=device)
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        logits = model(images)
        loss, _ = model.compute_loss(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / len(loader)


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    count = 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        pred = model(images).argmax(-1)
        correct += (pred == targets).all(dim=1).sum()
        count += targets.size(0)
    return correct / count


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    alphabet_size, max_len = 36, 7
    images = torch.randn(96, 1, 24, 96)
    targets = torch.randint(0, alphabet_size, (96, max_len))
    weights = estimate_position_weights(targets[:64], alphabet_size)

    model = PlateRecognizer(alphabet_size, max_len, weights).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_ds = torch.utils.data.TensorDataset(images[:64], targets[:64])
    val_ds = torch.utils.data.TensorDataset(images[64:], targets[64:])
    train_loader = torch.utils.data.DataLoader(train_ds, batch_size=16, shuffle=True)
    val_loader = torch.utils.data.DataLoader(val_ds, batch_size=16)

    for epoch in range(2):
        loss = train_epoch(model, train_loader, optimizer, device)
        acc = validate(model, val_loader, device)
        print(f"epoch {epoch}: loss {loss.item():.3f} seq-acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
