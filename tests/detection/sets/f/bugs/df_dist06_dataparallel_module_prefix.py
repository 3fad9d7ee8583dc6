# source: https://github.com/dontLoveBugs/DORN_pytorch/issues/4
# area: porting & distributed
# bug: on a GPU machine the model is always wrapped in nn.DataParallel and its state_dict is saved as is, so the keys carry a "module." prefix and the bare model in the predictor fails to load them
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthNet(nn.Module):
    """Small encoder-decoder for monocular depth (ordinal bins as in DORN)."""

    def __init__(self, n_bins=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.aspp = nn.Conv2d(32, 32, 3, padding=2, dilation=2)
        self.ordinal = nn.Conv2d(32, n_bins, 1)

    def forward(self, x):
        h = F.relu(self.aspp(self.enc(x)))
        logits = self.ordinal(h)
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


def build_model(device):
    model = DepthNet()
    if torch.cuda.device_count() > 0:
        model = nn.DataParallel(model)
    return model.to(device)


def ordinal_targets(depth, n_bins, max_depth=10.0):
    bins = torch.linspace(0, max_depth, n_bins, device=depth.device).view(1, -1, 1, 1)
    return (depth > bins).float()


def train(model, device, steps=5, n_bins=16):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        rgb = torch.rand(4, 3, 32, 32, device=device)
        depth = rgb.mean(1, keepdim=True) * 10.0
        loss = F.binary_cross_entropy_with_logits(model(rgb), ordinal_targets(depth, n_bins))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach()


def save_snapshot(model, path, epoch):
    torch.save({"epoch": epoch, "model": model.state_dict()}, path)  # expect[w]: any


class DepthPredictor:
    def __init__(self, ckpt_path, device):
        self.device = device
        ckpt = torch.load(ckpt_path, map_location=device)
        self.model = DepthNet().to(device)
        self.model.load_state_dict(ckpt["model"])  # expect[w]: any
        self.model.eval()

    @torch.no_grad()
    def __call__(self, rgb, max_depth=10.0):
        probs = torch.sigmoid(self.model(rgb.to(self.device)))
        n_bins = probs.shape[1]
        return probs.sum(1) * (max_depth / (n_bins - 1))


def main():
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model = build_model(device)
    last_loss = train(model, device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dorn_epoch1.pth")
        save_snapshot(model, path, epoch=1)
        predictor = DepthPredictor(path, device)
        depth = predictor(torch.rand(2, 3, 32, 32))
    print(f"train loss {last_loss.item():.4f}, predicted depth range "
          f"{depth.min().item():.2f}..{depth.max().item():.2f}")


if __name__ == "__main__":
    main()
