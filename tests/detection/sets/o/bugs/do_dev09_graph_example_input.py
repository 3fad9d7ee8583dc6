# source: https://github.com/patrickloeber/pytorchTutorial/pull/13
# area: device placement
# bug: the example batch used to log the model graph/summary comes straight from the test loader on the CPU while the model already lives on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

INPUT_SIZE, HIDDEN, NUM_CLASSES = 28 * 28, 64, 10


class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.l1 = nn.Linear(input_size, hidden_size)
        self.l2 = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


class GraphLogger:
    """Records the output shape and parameter count of every leaf module for one forward pass."""

    def __init__(self):
        self.rows = []

    def add_graph(self, model, example):
        hooks = []
        for name, mod in model.named_modules():
            if len(list(mod.children())) == 0:
                hooks.append(mod.register_forward_hook(self._hook(name)))
        try:
            with torch.no_grad():
                model(example)
        finally:
            for h in hooks:
                h.remove()

    def _hook(self, name):
        def fn(mod, inp, out):
            n_params = sum(p.numel() for p in mod.parameters())
            self.rows.append((name, mod.__class__.__name__, tuple(out.shape), n_params))
        return fn

    def dump(self):
        for row in self.rows:
            print("{:<6} {:<8} {:<12} {:>8}".format(*map(str, row)))


def fake_mnist(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    images = torch.rand(n, 1, 28, 28, generator=g) * 0.3
    for c in range(NUM_CLASSES):
        images[labels == c, 0, 2 * c:2 * c + 4, 4:24] += 0.7
    return TensorDataset(images, labels)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(fake_mnist(1024, 0), batch_size=64, shuffle=True)
    test_loader = DataLoader(fake_mnist(256, 1), batch_size=64, shuffle=False)

    model = NeuralNet(INPUT_SIZE, HIDDEN, NUM_CLASSES).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    writer = GraphLogger()
    example_data, _ = next(iter(test_loader))
    writer.add_graph(model, example_data.reshape(-1, INPUT_SIZE))  # expect: any
    writer.dump()

    for epoch in range(2):
        for images, labels in train_loader:
            images = images.reshape(-1, INPUT_SIZE).to(device)
            labels = labels.to(device)
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    correct = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for images, labels in test_loader:
            images = images.reshape(-1, INPUT_SIZE).to(device)
            correct += (model(images).argmax(1) == labels.to(device)).sum()
    print(f"test accuracy: {100.0 * correct.item() / len(test_loader.dataset):.1f}%")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
