# twin of: bugs/dl_dev01_resume_optimizer_state.py
# area: device placement
# correct: the network is moved to the device before the optimizer is built and its state restored, so load_state_dict casts the Adam buffers onto the parameters' device
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainConfig:
    num_keypoints: int = 8
    image_size: int = 32
    batch_size: int = 4
    lr: float = 4e-4
    iters_per_epoch: int = 3
    epochs: int = 2
    weights_only: bool = False


class PoseHead(nn.Module):
    def __init__(self, num_keypoints):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
        )
        self.heatmaps = nn.Conv2d(32, num_keypoints + 1, 1)
        self.pafs = nn.Conv2d(32, 2 * num_keypoints, 1)

    def forward(self, x):
        feats = self.backbone(x)
        return self.heatmaps(feats), self.pafs(feats)


def synthetic_batch(cfg, device):
    images = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device)
    half = cfg.image_size // 2
    hm = torch.rand(cfg.batch_size, cfg.num_keypoints + 1, half, half, device=device)
    paf = torch.randn(cfg.batch_size, 2 * cfg.num_keypoints, half, half, device=device)
    return images, hm, paf


def build_training_state(cfg, checkpoint_path, device):
    net = PoseHead(cfg.num_keypoints).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    start_epoch = 0
    if checkpoint_path is not None:
        checkpoint = torch.load(checkpoint_path, map_location="cpu")
        net.load_state_dict(checkpoint["state_dict"])
        if not cfg.weights_only:
            optimizer.load_state_dict(checkpoint["optimizer"])
            start_epoch = checkpoint["epoch"] + 1
    return net, optimizer, start_epoch


def train(cfg, checkpoint_dir, device, resume_from=None):
    net, optimizer, start_epoch = build_training_state(cfg, resume_from, device)
    net.train()
    last_path = None
    for epoch in range(start_epoch, start_epoch + cfg.epochs):
        running = torch.zeros((), device=device)
        for _ in range(cfg.iters_per_epoch):
            images, hm_target, paf_target = synthetic_batch(cfg, device)
            hm_pred, paf_pred = net(images)
            loss = F.mse_loss(hm_pred, hm_target) + F.mse_loss(paf_pred, paf_target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        print(f"epoch {epoch}: mean loss {(running / cfg.iters_per_epoch).item():.4f}")
        last_path = os.path.join(checkpoint_dir, f"checkpoint_epoch{epoch}.pth")
        torch.save({"state_dict": net.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch}, last_path)
    return last_path


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainConfig()
    with tempfile.TemporaryDirectory() as ckpt_dir:
        first = train(cfg, ckpt_dir, device)
        print("resuming from", os.path.basename(first))
        train(cfg, ckpt_dir, device, resume_from=first)


if __name__ == "__main__":
    main()
