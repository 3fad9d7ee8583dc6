# source: https://github.com/kornia/kornia/issues/589
# area: dtype
# bug: low-resolution inputs are made by bilinear interpolation of raw uint8 image batches; the CPU kernel accepts uint8 but CUDA's upsample_bilinear2d is not implemented for 'Byte'
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RawPatchDataset(Dataset):
    """Returns uint8 HWC patches, the way they come out of an image decoder."""

    def __init__(self, n=32, size=64, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.patches = torch.randint(0, 256, (n, size, size, 3), dtype=torch.uint8, generator=g)

    def __len__(self):
        return self.patches.size(0)

    def __getitem__(self, i):
        return self.patches[i]


class GpuDegradation:
    """Builds (low-res, high-res) pairs on the accelerator to keep the loader light."""

    def __init__(self, scale=4, mean=(0.45, 0.44, 0.40), std=(0.27, 0.26, 0.28)):
        self.scale = scale
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)

    def __call__(self, batch_hwc, device):
        hr = batch_hwc.to(device, non_blocking=True).permute(0, 3, 1, 2).contiguous()
        h, w = hr.shape[-2:]
        lr = F.interpolate(hr, size=(h // self.scale, w // self.scale), mode="bilinear", align_corners=False)  # expect: any
        mean, std = self.mean.to(device), self.std.to(device)
        hr = (hr.float() / 255.0 - mean) / std
        lr = (lr.float() / 255.0 - mean) / std
        return lr, hr


class TinySR(nn.Module):
    def __init__(self, scale=4, feats=32):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, feats, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(feats, feats, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(feats, 3 * scale * scale, 3, padding=1),
        )
        self.up = nn.PixelShuffle(scale)

    def forward(self, x):
        base = F.interpolate(x, scale_factor=self.up.upscale_factor, mode="bilinear", align_corners=False)
        return base + self.up(self.body(x))


def train_epoch(model, loader, degrade, opt, device):
    model.train()
    total = 0.0
    for batch in loader:
        lr, hr = degrade(batch, device)
        loss = F.l1_loss(model(lr), hr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    return (total / len(loader)).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(RawPatchDataset(), batch_size=16, shuffle=True, pin_memory=device.type == "cuda")
    model = TinySR().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    degrade = GpuDegradation()
    for epoch in range(2):
        print(f"epoch {epoch}: l1 {train_epoch(model, loader, degrade, opt, device):.4f}")


if __name__ == "__main__":
    main()
