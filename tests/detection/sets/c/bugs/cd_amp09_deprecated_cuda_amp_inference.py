# source: https://github.com/teamtomo/membrain-seg/issues/120
# area: AMP
# bug: sliding-window inference uses the deprecated torch.cuda.amp.autocast (FutureWarning since torch 2.4, slated for removal) instead of torch.autocast(device_type=device.type, ...)
import itertools
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SegmentConfig:
    patch: int = 16
    overlap: int = 4
    batch_windows: int = 4
    threshold: float = 0.5
    mixed_precision: bool = True


class MembraneNet3D(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv3d(1, width, 3, padding=1), nn.InstanceNorm3d(width), nn.LeakyReLU())
        self.enc2 = nn.Sequential(nn.Conv3d(width, 2 * width, 3, stride=2, padding=1), nn.LeakyReLU())
        self.up = nn.ConvTranspose3d(2 * width, width, 2, stride=2)
        self.out = nn.Conv3d(2 * width, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        d = self.up(self.enc2(e1))
        return self.out(torch.cat([e1, d], dim=1))


def window_starts(size, patch, step):
    starts = list(range(0, max(size - patch, 0) + 1, step))
    if starts[-1] + patch < size:
        starts.append(size - patch)
    return starts


def segment_tomogram(model, tomo, cfg: SegmentConfig, device):
    use_amp = cfg.mixed_precision and device.type == "cuda"
    step = cfg.patch - cfg.overlap
    D, H, W = tomo.shape
    logits = torch.zeros(1, 1, D, H, W, device=device)
    counts = torch.zeros_like(logits)
    corners = list(itertools.product(*(window_starts(s, cfg.patch, step) for s in (D, H, W))))
    vol = tomo[None, None].to(device)
    model.eval()
    for i in range(0, len(corners), cfg.batch_windows):
        chunk = corners[i:i + cfg.batch_windows]
        patches = torch.cat([vol[..., z:z + cfg.patch, y:y + cfg.patch, x:x + cfg.patch] for z, y, x in chunk])
        with torch.no_grad(), torch.cuda.amp.autocast(enabled=use_amp):  # expect: any
            out = model(patches).float()
        for (z, y, x), o in zip(chunk, out):
            logits[..., z:z + cfg.patch, y:y + cfg.patch, x:x + cfg.patch] += o
            counts[..., z:z + cfg.patch, y:y + cfg.patch, x:x + cfg.patch] += 1
    prob = torch.sigmoid(logits / counts)
    return (prob > cfg.threshold).squeeze().cpu(), prob.squeeze().cpu()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = MembraneNet3D().to(device)
    tomo = torch.randn(28, 28, 28)
    tomo[:, 10:13, :] += 3.0
    tomo = F.avg_pool3d(tomo[None, None], 3, stride=1, padding=1)[0, 0]
    mask, prob = segment_tomogram(model, tomo, SegmentConfig(), device)
    print(f"voxels labelled membrane: {int(mask.sum())} / {mask.numel()}, mean prob {prob.mean():.3f}")


if __name__ == "__main__":
    main()
