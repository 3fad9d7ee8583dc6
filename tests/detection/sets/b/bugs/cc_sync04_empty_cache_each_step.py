# source: https://discuss.pytorch.org/t/about-torch-cuda-empty-cache/34232/2
# area: transfer & sync
# bug: torch.cuda.synchronize() and torch.cuda.empty_cache() run after every batch, stalling the CPU on the GPU and throwing away the caching allocator's blocks each step
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SineDataset(Dataset):
    def __init__(self, n=128, length=12):
        t = torch.linspace(0, 6.28, length)
        phase = torch.rand(n, 1) * 6.28
        self.x = torch.sin(t + phase).unsqueeze(-1)
        self.y = torch.cos(t + phase)[:, -1:]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Regressor(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.out(h[:, -1])


def fit(model, loader, epochs=2):
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    crit = nn.MSELoss()
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = crit(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
            del loss
            if torch.cuda.is_available():
                torch.cuda.synchronize()  # expect[cache]: any
                torch.cuda.empty_cache()  # expect[cache]: any
        print(f"epoch {epoch} mse {(total / len(loader)).item():.4f}")


def main():
    loader = DataLoader(SineDataset(), batch_size=32, shuffle=True)
    model = Regressor().to(device)
    fit(model, loader)


if __name__ == "__main__":
    main()
