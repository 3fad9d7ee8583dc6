# source: https://github.com/michuanhaohao/reid-strong-baseline/issues/114
# area: device placement
# bug: on resume the optimizer state is loaded while the model is still on the CPU and the model is moved afterwards, so Adam's exp_avg buffers stay on the CPU and optimizer.step() mixes devices
import os
import tempfile
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class Baseline(nn.Module):
    def __init__(self, num_classes, feat_dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, feat_dim, 3, stride=2, padding=1), nn.BatchNorm2d(feat_dim), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.bottleneck = nn.BatchNorm1d(feat_dim)
        self.classifier = nn.Linear(feat_dim, num_classes, bias=False)

    def forward(self, x):
        feat = self.backbone(x).flatten(1)
        return self.classifier(self.bottleneck(feat)), feat


def make_optimizer(cfg, model):
    params = []
    for key, value in model.named_parameters():
        lr = cfg.base_lr * (cfg.bias_lr_factor if "bias" in key else 1.0)
        params.append({"params": [value], "lr": lr, "weight_decay": cfg.weight_decay})
    return torch.optim.Adam(params)


def do_train(cfg, model, optimizer, loader, device, start_epoch, num_epochs):
    model.train()
    total = torch.zeros((), device=device)
    for epoch in range(start_epoch, start_epoch + num_epochs):
        for img, pid in loader:
            img, pid = img.to(device), pid.to(device)
            score, _ = model(img)
            loss = F.cross_entropy(score, pid)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
    return total


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def resume(cfg, loader, device, ckpt_path):
    model = Baseline(cfg.num_classes)
    optimizer = make_optimizer(cfg, model)
    checkpoint = torch.load(ckpt_path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])  # expect[w]: any
    start_epoch = checkpoint["epoch"] + 1
    model.to(device)  # expect[w]: any
    return do_train(cfg, model, optimizer, loader, device, start_epoch, cfg.resume_epochs)


def main():
    cfg = SimpleNamespace(num_classes=8, base_lr=3.5e-4, bias_lr_factor=2.0, weight_decay=5e-4,
                          first_epochs=1, resume_epochs=1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    images = torch.randn(64, 3, 32, 16)
    pids = torch.randint(0, cfg.num_classes, (64,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, pids),
                                         batch_size=16, shuffle=True, drop_last=True)

    with tempfile.TemporaryDirectory() as out_dir:
        ckpt_path = os.path.join(out_dir, "baseline_checkpoint.pth")
        model = Baseline(cfg.num_classes).to(device)
        optimizer = make_optimizer(cfg, model)
        do_train(cfg, model, optimizer, loader, device, 0, cfg.first_epochs)
        save_checkpoint(ckpt_path, model, optimizer, cfg.first_epochs - 1)

        total = resume(cfg, loader, device, ckpt_path)
        print("resumed training loss sum", round(total.item(), 4))


if __name__ == "__main__":
    main()
