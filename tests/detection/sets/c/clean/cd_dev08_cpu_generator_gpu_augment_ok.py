# twin of: bugs/cd_dev08_cpu_generator_gpu_augment.py
# area: device placement
# correct: the seeded generator is created on the same device the transforms sample on, so randn/uniform_ accept it
import torch
import torch.nn as nn
import torch.nn.functional as F


class RandomJitter:
    def __init__(self, sigma, generator):
        self.sigma = sigma
        self.generator = generator

    def __call__(self, points):
        noise = torch.randn(points.shape, generator=self.generator, device=points.device,
                            dtype=points.dtype)
        return points + noise * self.sigma


class RandomScale:
    def __init__(self, low, high, generator):
        self.low, self.high = low, high
        self.generator = generator

    def __call__(self, points):
        scale = torch.empty(points.size(0), 1, 1, device=points.device, dtype=points.dtype)
        scale.uniform_(self.low, self.high, generator=self.generator)
        return points * scale


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class OutlineClassifier(nn.Module):
    def __init__(self, num_classes, hidden=64):
        super().__init__()
        self.point_mlp = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, points):
        feats = self.point_mlp(points)
        return self.head(feats.max(dim=1).values)


def build_augmentation(seed, device):
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return Compose([RandomScale(0.9, 1.1, generator), RandomJitter(0.01, generator)])


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_classes = 10
    outlines = torch.rand(200, 48, 2) * 2 - 1
    labels = torch.randint(0, num_classes, (200,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(outlines, labels),
                                         batch_size=25, shuffle=True)

    augment = build_augmentation(seed=1234, device=device)
    model = OutlineClassifier(num_classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(3):
        model.train()
        total = torch.zeros((), device=device)
        for points, target in loader:
            points, target = points.to(device), target.to(device)
            points = augment(points)
            loss = F.cross_entropy(model(points), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {total.item() / len(loader):.4f}")


if __name__ == "__main__":
    main()
