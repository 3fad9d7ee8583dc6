# source: https://github.com/llmpass/RSTT/issues/3
# area: transfer & sync
# bug: the FPS benchmark reads time.time() around asynchronous CUDA launches with no torch.cuda.synchronize, so it times kernel queuing, not inference
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class BenchConfig:
    in_frames: int = 4
    out_frames: int = 7
    channels: int = 3
    height: int = 32
    width: int = 32
    scale: int = 2
    warmup: int = 2
    iters: int = 5


class FrameEncoder(nn.Module):
    def __init__(self, c_in, c_feat):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_feat, 3, padding=1)
        self.conv2 = nn.Conv2d(c_feat, c_feat, 3, padding=1)

    def forward(self, x):
        return self.conv2(F.leaky_relu(self.conv1(x), 0.1))


class SpaceTimeSR(nn.Module):
    def __init__(self, cfg, feat=24):
        super().__init__()
        self.cfg = cfg
        self.encoder = FrameEncoder(cfg.channels, feat)
        self.temporal = nn.Conv3d(feat, feat, (3, 3, 3), padding=1)
        self.upsample = nn.Sequential(
            nn.Conv2d(feat, cfg.channels * cfg.scale ** 2, 3, padding=1),
            nn.PixelShuffle(cfg.scale),
        )

    def forward(self, frames):
        b, t, c, h, w = frames.shape
        feats = self.encoder(frames.flatten(0, 1)).view(b, t, -1, h, w)
        feats = feats.permute(0, 2, 1, 3, 4)
        feats = F.interpolate(feats, size=(self.cfg.out_frames, h, w), mode="trilinear", align_corners=False)
        feats = F.leaky_relu(self.temporal(feats), 0.1)
        feats = feats.permute(0, 2, 1, 3, 4).flatten(0, 1)
        out = self.upsample(feats)
        return out.view(b, self.cfg.out_frames, c, h * self.cfg.scale, w * self.cfg.scale)


def benchmark(model, inputs, cfg):
    model.eval()
    with torch.no_grad():
        for _ in range(cfg.warmup):
            model(inputs)
    start = time.time()  # expect[t]: any
    with torch.no_grad():
        for _ in range(cfg.iters):
            outputs = model(inputs)
    end = time.time()  # expect[t]: any
    elapsed = end - start
    return outputs, cfg.iters * cfg.out_frames / elapsed, elapsed / cfg.iters


def main():
    cfg = BenchConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SpaceTimeSR(cfg).to(device)
    inputs = torch.rand(1, cfg.in_frames, cfg.channels, cfg.height, cfg.width, device=device)
    outputs, fps, per_call = benchmark(model, inputs, cfg)
    print(f"output {tuple(outputs.shape)}  fps={fps:.1f}  latency={per_call * 1000:.2f} ms")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
