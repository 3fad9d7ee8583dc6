# source: https://github.com/ZettaAI/zetta_utils/pull/427
# area: device placement
# bug: the to_torch() helper defaults to device="cpu", so passing it a cuda prediction silently copies it back to the host, and the blend with the cuda window/accumulator then mixes devices
from typing import Union

import numpy as np
import torch
import torch.nn as nn


def to_torch(data: Union[np.ndarray, torch.Tensor], device="cpu") -> torch.Tensor:  # expect[w]: any
    if isinstance(data, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(data)).to(device)
    return data.to(device)


def hann_window_3d(size, device):
    w = [torch.hann_window(s + 2, periodic=False, device=device)[1:-1] for s in size]
    return w[0][:, None, None] * w[1][None, :, None] * w[2][None, None, :]


class ChunkedBlender:
    """Accumulates overlapping chunk predictions with a smooth window."""

    def __init__(self, volume_shape, chunk, device):
        self.acc = torch.zeros(volume_shape, device=device)
        self.norm = torch.zeros(volume_shape, device=device)
        self.window = hann_window_3d(chunk, device)

    def add(self, pred, start):
        sl = tuple(slice(s, s + c) for s, c in zip(start, pred.shape))
        self.acc[sl] += to_torch(pred) * self.window  # expect[w]: any
        self.norm[sl] += self.window

    def result(self):
        return self.acc / self.norm.clamp(min=1e-6)


class TinySegNet(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(1, width, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv3d(width, width, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv3d(width, 1, 1),
        )

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def chunk_starts(shape, chunk, stride):
    ranges = []
    for s, c, st in zip(shape, chunk, stride):
        starts = list(range(0, s - c + 1, st))
        if starts[-1] != s - c:
            starts.append(s - c)
        ranges.append(starts)
    return [(z, y, x) for z in ranges[0] for y in ranges[1] for x in ranges[2]]


@torch.no_grad()
def segment_volume(model, volume: np.ndarray, chunk=(16, 32, 32), stride=(8, 16, 16)):
    device = next(model.parameters()).device
    blender = ChunkedBlender(volume.shape, chunk, device)
    for start in chunk_starts(volume.shape, chunk, stride):
        crop = volume[tuple(slice(s, s + c) for s, c in zip(start, chunk))]
        x = to_torch(crop.astype(np.float32), device=device)[None, None]
        pred = model(x)[0, 0]
        blender.add(pred, start)
    return blender.result()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinySegNet().to(device).eval()
    rng = np.random.default_rng(0)
    volume = rng.normal(size=(32, 64, 64)).astype(np.float32)
    prob = segment_volume(model, volume)
    mask = (prob > 0.5).to(torch.uint8)
    print("volume", tuple(prob.shape), "foreground voxels", int(mask.sum()))
