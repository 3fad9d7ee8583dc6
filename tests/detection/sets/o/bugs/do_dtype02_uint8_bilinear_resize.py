# source: https://github.com/pytorch/pytorch/issues/5580
# area: dtype
# bug: raw uint8 frames are resized with bilinear F.interpolate on the device; CPU has a uint8 bilinear kernel but CUDA does not, so inference crashes on the GPU
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ClipConfig:
    frames: int = 8
    size: tuple = (112, 112)
    mean: tuple = (0.43, 0.40, 0.37)
    std: tuple = (0.23, 0.22, 0.22)
    num_classes: int = 10


class FramePreprocessor:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.mean = torch.tensor(cfg.mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(cfg.std, device=device).view(1, 3, 1, 1)

    def __call__(self, frames):
        clip = torch.from_numpy(frames).to(self.device)
        clip = clip.permute(0, 3, 1, 2).contiguous()
        clip = F.interpolate(clip, size=self.cfg.size, mode="bilinear", align_corners=False)  # expect: any
        clip = clip.float().div_(255.0)
        clip = (clip - self.mean) / self.std
        return clip.permute(1, 0, 2, 3)


class TinyVideoNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, 16, kernel_size=(1, 5, 5), stride=(1, 2, 2), padding=(0, 2, 2)),
            nn.BatchNorm3d(16), nn.ReLU(inplace=True),
        )
        self.block = nn.Sequential(
            nn.Conv3d(16, 32, kernel_size=3, stride=(1, 2, 2), padding=1),
            nn.BatchNorm3d(32), nn.ReLU(inplace=True),
        )
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.block(self.stem(x))
        return self.head(x.mean(dim=(2, 3, 4)))


def fake_video_stream(n_clips, cfg, height=240, width=320, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_clips):
        yield rng.integers(0, 256, size=(cfg.frames, height, width, 3), dtype=np.uint8)


@torch.no_grad()
def classify_stream(model, preprocess, stream, batch_size=4):
    model.eval()
    predictions, batch = [], []
    for frames in stream:
        batch.append(preprocess(frames))
        if len(batch) == batch_size:
            predictions.append(model(torch.stack(batch)).argmax(dim=1))
            batch = []
    if batch:
        predictions.append(model(torch.stack(batch)).argmax(dim=1))
    return torch.cat(predictions).cpu()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = ClipConfig()
    model = TinyVideoNet(cfg.num_classes).to(device)
    preprocess = FramePreprocessor(cfg, device)
    labels = classify_stream(model, preprocess, fake_video_stream(10, cfg))
    print("predicted classes:", labels.tolist())


if __name__ == "__main__":
    main()
