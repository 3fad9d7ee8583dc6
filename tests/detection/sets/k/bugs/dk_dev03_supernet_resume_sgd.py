# source: https://github.com/microsoft/Cream/issues/2
# area: device placement
# bug: the checkpoint (with SGD momentum buffers) is loaded into the optimizer while the model is still on the CPU and the model is moved to the GPU only afterwards, so the momentum buffers stay on the CPU and optimizer.step() fails
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainConfig:
    num_classes: int = 10
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4
    epochs: int = 2
    steps_per_epoch: int = 3
    batch_size: int = 16
    auto_resume: bool = True


class ChoiceBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.ops = nn.ModuleList(
            nn.Conv2d(channels, channels, k, padding=k // 2, groups=channels) for k in (3, 5, 7)
        )
        self.pw = nn.Conv2d(channels, channels, 1)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x, choice):
        return F.relu(self.bn(self.pw(self.ops[choice](x)))) + x


class SuperNet(nn.Module):
    def __init__(self, num_classes, channels=16, depth=3):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.blocks = nn.ModuleList(ChoiceBlock(channels) for _ in range(depth))
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x, path):
        x = self.stem(x)
        for block, choice in zip(self.blocks, path):
            x = block(x, choice)
        return self.head(x.mean(dim=(2, 3)))


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}, path)


def resume_checkpoint(path, model, optimizer):
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["state_dict"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return ckpt["epoch"] + 1


def train_epoch(model, optimizer, cfg, device):
    model.train()
    total = torch.zeros((), device=device)
    for _ in range(cfg.steps_per_epoch):
        x = torch.randn(cfg.batch_size, 3, 16, 16, device=device)
        y = torch.randint(0, cfg.num_classes, (cfg.batch_size,), device=device)
        path = torch.randint(0, 3, (len(model.blocks),)).tolist()
        loss = F.cross_entropy(model(x, path), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / cfg.steps_per_epoch


def run(cfg, ckpt_path, device):
    model = SuperNet(cfg.num_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                weight_decay=cfg.weight_decay)
    start_epoch = 0
    if cfg.auto_resume and os.path.exists(ckpt_path):
        start_epoch = resume_checkpoint(ckpt_path, model, optimizer)  # expect[w]: any
    model.to(device)  # expect[w]: any
    for epoch in range(start_epoch, start_epoch + cfg.epochs):
        loss = train_epoch(model, optimizer, cfg, device)
        save_checkpoint(ckpt_path, model, optimizer, epoch)
        print(f"epoch {epoch} loss {loss.item():.4f}")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainConfig()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "checkpoint-last.pth.tar")
        run(cfg, ckpt_path, device)
        run(cfg, ckpt_path, device)


if __name__ == "__main__":
    main()
