"""Sub-pixel super-resolution (x2): the dataset downsamples each image in __getitem__,
the network upsamples with PixelShuffle, and PSNR is computed from the MSE in Python."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SmoothImages(Dataset):
    """Sums of a few random 2-D sinusoids, 1x16x16, values in [0, 1]."""

    def __init__(self, n, seed, size=16):
        g = torch.Generator().manual_seed(seed)
        coords = torch.linspace(0, 1, size)
        yy, xx = torch.meshgrid(coords, coords, indexing="ij")
        freqs = torch.rand(n, 2, 2, generator=g) * 3
        images = 0.5 + 0.25 * (
            torch.sin(6.28 * (freqs[:, 0, 0, None, None] * xx + freqs[:, 0, 1, None, None] * yy))
            + torch.cos(6.28 * (freqs[:, 1, 0, None, None] * xx - freqs[:, 1, 1, None, None] * yy))
        )
        self.images = images.unsqueeze(1)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        target = self.images[index]
        low_res = F.avg_pool2d(target.unsqueeze(0), 2).squeeze(0)
        return low_res, target


class SuperResNet(nn.Module):
    def __init__(self, upscale_factor=2):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, upscale_factor ** 2, 3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))


def test(model, loader, criterion):
    avg_psnr, avg_loss = 0.0, 0.0
    with torch.no_grad():
        for low_res, target in loader:
            mse = criterion(model(low_res), target)
            avg_psnr += 10 * math.log10(1 / mse.item())
            avg_loss += mse.item()
    print(f"===> Avg. PSNR: {avg_psnr / len(loader):.4f} dB")
    return avg_loss / len(loader)


def main():
    parser = argparse.ArgumentParser(description="super resolution example")
    parser.add_argument("--upscale_factor", type=int, default=2)
    parser.add_argument("--batchSize", type=int, default=8)
    parser.add_argument("--nEpochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=123)
    opt = parser.parse_args()
    torch.manual_seed(opt.seed)
    training_data_loader = DataLoader(SmoothImages(128, seed=1), batch_size=opt.batchSize, shuffle=True)
    testing_data_loader = DataLoader(SmoothImages(32, seed=2), batch_size=opt.batchSize)
    model = SuperResNet(opt.upscale_factor)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=opt.lr)
    for epoch in range(1, opt.nEpochs + 1):
        epoch_loss = 0
        for low_res, target in training_data_loader:
            optimizer.zero_grad()
            loss = criterion(model(low_res), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
        print(f"===> Epoch {epoch} Complete: Avg. Loss: {epoch_loss / len(training_data_loader):.4f}")
        test_loss = test(model, testing_data_loader, criterion)
    print(f"final loss {test_loss:.8f}")


if __name__ == "__main__":
    main()
