# source: https://github.com/ai2cm/ace/issues/628
# area: transfer & sync
# bug: collate_fn returns a custom BatchData with no pin_memory() method, so pin_memory=True silently pins nothing and the non_blocking copies come from pageable memory
from dataclasses import dataclass
from typing import Dict

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
VARIABLES = ("air_temperature", "surface_pressure", "specific_humidity", "eastward_wind")


@dataclass
class BatchData:
    data: Dict[str, torch.Tensor]
    time: torch.Tensor

    def to_device(self):
        return BatchData(
            data={k: v.to(device, non_blocking=True) for k, v in self.data.items()},  # expect[p]: any
            time=self.time.to(device, non_blocking=True),
        )


class ClimateWindows(Dataset):
    def __init__(self, n_times=64, n_lat=16, n_lon=32, window=2):
        g = torch.Generator().manual_seed(0)
        self.fields = {v: torch.randn(n_times, n_lat, n_lon, generator=g) for v in VARIABLES}
        self.window = window
        self.n_times = n_times

    def __len__(self):
        return self.n_times - self.window

    def __getitem__(self, i):
        sample = {k: v[i:i + self.window] for k, v in self.fields.items()}
        return sample, torch.arange(i, i + self.window)


def collate_batch(samples):
    data = {k: torch.stack([s[0][k] for s in samples]) for k in VARIABLES}
    time = torch.stack([s[1] for s in samples])
    return BatchData(data=data, time=time)


def build_loader(batch_size=8):
    return DataLoader(
        ClimateWindows(),
        batch_size=batch_size,
        shuffle=True,
        collate_fn=collate_batch,
        pin_memory=device.type == "cuda",  # expect[p]: any
        drop_last=True,
    )


class Stepper(nn.Module):
    def __init__(self, n_vars=len(VARIABLES), hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(n_vars, hidden, 3, padding=1, padding_mode="circular"), nn.GELU(),
            nn.Conv2d(hidden, n_vars, 3, padding=1, padding_mode="circular"),
        )

    def forward(self, state):
        return state + self.net(state)


def train(epochs=2):
    loader = build_loader()
    model = Stepper().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for batch in loader:
            batch = batch.to_device()
            fields = torch.stack([batch.data[k] for k in VARIABLES], dim=2)
            pred = model(fields[:, 0])
            loss = torch.mean((pred - fields[:, 1]) ** 2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / len(loader)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train()
