# source: https://discuss.pytorch.org/t/when-to-set-pin-memory-to-true/19723/2
# area: transfer & sync
# bug: the DataLoader has no workers and no pin_memory, so the CPU augmentation starves the GPU and the non_blocking=True copies from pageable memory are effectively synchronous
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AugmentedImages(Dataset):
    def __init__(self, n=256, size=24):
        g = torch.Generator().manual_seed(1)
        self.images = torch.rand(n, 3, size, size, generator=g)
        self.labels = (self.images[:, 0].mean((1, 2)) > 0.5).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = self.images[i]
        if torch.rand(()) < 0.5:
            img = img.flip(-1)
        shift = int(torch.randint(-2, 3, ()))
        img = torch.roll(img, shifts=shift, dims=-2)
        img = (img - img.mean()) / (img.std() + 1e-6)
        return img, self.labels[i]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 2))

    def forward(self, x):
        return self.head(self.f(x))


def build_loader(ds, batch_size=32):
    return DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)  # expect: any


def train(model, loader, epochs=2):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        correct = torch.zeros((), device=device)
        for img, label in loader:
            img = img.to(device, non_blocking=True)
            label = label.to(device, non_blocking=True)
            logits = model(img)
            loss = nn.functional.cross_entropy(logits, label)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            correct += (logits.argmax(1) == label).sum()
        print(f"epoch {epoch}: train acc {correct.item() / (len(loader) * loader.batch_size):.3f}")


if __name__ == "__main__":
    train(SmallCNN().to(device), build_loader(AugmentedImages()))
