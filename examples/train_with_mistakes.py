"""A CPU training script moved to the GPU by hand, with the classic mistakes left in.

It runs on the CPU as it is. Each line that `torchport check examples/train_with_mistakes.py`
reports carries a `# mistake: TPxxx` comment naming the rule; every other line is correct
code that must get no finding (tests/analyze/test_example.py holds both to it).
"""

# Rebinding the loop's batch (`x = x.to(device)`) is the idiom this example is about.
# ruff: noqa: PLW2901

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PointsDataset(Dataset):
    def __init__(self, n=1024, features=16, classes=3):
        self.x = np.random.rand(n, features)  # float64, as NumPy makes it
        self.y = np.random.randint(0, classes, size=n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = torch.from_numpy(self.x[i])  # mistake: TP301 float64 reaches the model
        return x, torch.tensor(self.y[i])


class Classifier(nn.Module):
    def __init__(self, features=16, hidden=32, classes=3):
        super().__init__()
        self.blocks = [nn.Linear(features, hidden), nn.Linear(hidden, hidden)]  # mistake: TP106
        self.head = nn.Linear(hidden, classes)
        self.temperature = torch.ones(classes)  # mistake: TP105 never moves with the model
        self.register_buffer("offset", torch.zeros(classes))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        mask = torch.ones(x.shape[0], 1)  # mistake: TP103 made on the CPU at every call
        scale = torch.ones_like(x)
        return self.head(x * mask * scale) / self.temperature + self.offset


def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.float().to(device, non_blocking=True), y.to(device, non_blocking=True)
            preds = model(x).argmax(1)
            correct += (preds == y).sum()
    return correct.item() / len(loader.dataset)


def main():
    dataset = PointsDataset()
    loader = DataLoader(dataset, batch_size=64, shuffle=True)  # mistake: TP201, TP210
    model = Classifier().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        running = 0.0
        for x, y in loader:
            x = x.float()
            x.to(device)  # mistake: TP101 the result is thrown away
            y = y.to(device)  # mistake: TP202 blocking copy in the hot loop
            optimizer.zero_grad()
            loss = criterion(model(x), y)  # mistake: TP102 x never reached the device
            loss.backward()
            optimizer.step()
            running += loss  # mistake: TP209 keeps every step's graph alive
            if loss.item() > 100:  # mistake: TP204 waits for the GPU every step
                break
        print(f"epoch {epoch}: loss {running.item() / len(loader):.4f}")
    print(f"accuracy {evaluate(model, loader):.3f}")
    torch.save(model.state_dict(), "/tmp/train_with_mistakes.pt")
    state = torch.load("/tmp/train_with_mistakes.pt")  # mistake: TP107
    model.load_state_dict(state)
    probe = torch.randn(4, 16).to(device)  # mistake: TP104 made on the CPU, then copied
    print(model(probe).argmax(1).numpy())  # mistake: TP108 fails on a GPU tensor


if __name__ == "__main__":
    main()
