# source: https://github.com/huggingface/accelerate/pull/2685
# area: transfer & sync
# bug: the device-placing loader moves already-pinned batches with a blocking .to(device), which synchronizes the CUDA stream on every batch
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class TrainArgs:
    n_samples: int = 256
    in_dim: int = 48
    n_classes: int = 6
    batch_size: int = 32
    epochs: int = 2
    num_workers: int = 2
    lr: float = 1e-3


class TabularDataset(Dataset):
    def __init__(self, args):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(args.n_samples, args.in_dim, generator=g)
        proj = torch.randn(args.in_dim, args.n_classes, generator=g)
        self.y = (self.x @ proj).argmax(dim=1)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"features": self.x[i], "labels": self.y[i]}


def send_to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)  # expect: any
    if isinstance(obj, Mapping):
        return type(obj)({k: send_to_device(v, device) for k, v in obj.items()})
    if isinstance(obj, (list, tuple)):
        return type(obj)(send_to_device(v, device) for v in obj)
    return obj


class DeviceLoader:
    def __init__(self, loader, device):
        self.loader, self.device = loader, device

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield send_to_device(batch, self.device)


def build_loader(args, device):
    ds = TabularDataset(args)
    loader = DataLoader(
        ds, batch_size=args.batch_size, shuffle=True, drop_last=True,
        num_workers=args.num_workers, pin_memory=device.type == "cuda",
        persistent_workers=args.num_workers > 0,
    )
    return DeviceLoader(loader, device)


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(args.in_dim, 128), nn.GELU(), nn.Linear(128, args.n_classes)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    loader = build_loader(args, device)
    for epoch in range(args.epochs):
        epoch_loss = torch.zeros((), device=device)
        for batch in loader:
            logits = model(batch["features"])
            loss = loss_fn(logits, batch["labels"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: mean loss {(epoch_loss / len(loader)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train(TrainArgs())
