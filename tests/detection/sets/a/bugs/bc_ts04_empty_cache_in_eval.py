# source: https://discuss.pytorch.org/t/about-torch-cuda-empty-cache/34232/2
# area: transfer & sync
# bug: evaluate() calls torch.cuda.empty_cache() after every batch, which syncs the device and defeats the caching allocator
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SegHead(nn.Module):
    def __init__(self, c_in=3, n_cls=4):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        )
        self.cls = nn.Conv2d(16, n_cls, 1)

    def forward(self, x):
        return self.cls(self.body(x))


def pixel_accuracy(logits, target):
    return (logits.argmax(1) == target).float().mean()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    accs = []
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        logits = model(images)
        accs.append(pixel_accuracy(logits, masks))
        del logits
        torch.cuda.empty_cache()  # expect: any
    return torch.stack(accs).mean().item()


def train(model, loader, opt, epochs=2):
    crit = nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            loss = crit(model(images), masks)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    imgs = torch.randn(64, 3, 16, 16)
    masks = (imgs[:, 0] > 0).long() + (imgs[:, 1] > 0.5).long()
    ds = TensorDataset(imgs, masks)
    model = SegHead().to(device)
    train(model, DataLoader(ds, batch_size=8, shuffle=True), torch.optim.Adam(model.parameters(), 1e-2))
    print("pixel acc", round(evaluate(model, DataLoader(ds, batch_size=8)), 4))
