# source: https://github.com/dingo-gw/dingo/pull/55
# area: dtype
# bug: the Dataset whitens/adds NumPy noise in float64 and returns it via torch.from_numpy, and the model is then cast to the sample dtype to match, so the whole network trains in float64 on the GPU (many times slower than float32)
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class WaveformDataset(Dataset):
    def __init__(self, n=256, length=128):
        t = np.linspace(0, 1, length, dtype=np.float32)
        self.freqs = np.random.uniform(5, 20, size=n).astype(np.float32)
        self.clean = np.sin(2 * np.pi * self.freqs[:, None] * t[None, :]).astype(np.float32)
        self.asd = np.random.uniform(0.5, 1.5, size=length).astype(np.float32)

    def __len__(self):
        return len(self.clean)

    def __getitem__(self, idx):
        noise = np.random.normal(0.0, 1.0, size=self.clean.shape[1])
        whitened = self.clean[idx] / self.asd + noise
        x = torch.from_numpy(whitened)  # expect[f64]: any
        y = torch.tensor([self.freqs[idx] / 20.0])
        return x, y


class PosteriorNet(nn.Module):
    def __init__(self, length=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(length, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1)
        )

    def forward(self, x):
        return self.net(x)


def build_model(dataset):
    sample_x, _ = dataset[0]
    model = PosteriorNet(sample_x.numel())
    return model.to(device=device, dtype=sample_x.dtype)  # expect[f64]: any


dataset = WaveformDataset()
loader = DataLoader(dataset, batch_size=32, shuffle=True)
model = build_model(dataset)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    running = 0.0
    for x, y in loader:
        x = x.to(device)
        y = y.to(device, dtype=x.dtype)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item() * x.size(0)
    print(f"epoch {epoch} mse {running / len(dataset):.4f}")
