# source: https://github.com/pytorch/vision/issues/2289
# area: dtype
# bug: decoded uint8 frames are resized with bilinear interpolate after being moved to the GPU; CPU has a uint8 bilinear kernel but CUDA does not implement it for Byte
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class PreprocessConfig:
    size: tuple = (64, 64)
    mean: tuple = (0.485, 0.456, 0.406)
    std: tuple = (0.229, 0.224, 0.225)


class GpuPreprocessor:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.mean = torch.tensor(cfg.mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(cfg.std, device=device).view(1, 3, 1, 1)

    def __call__(self, frames_hwc):
        batch = torch.from_numpy(np.stack(frames_hwc)).permute(0, 3, 1, 2).contiguous()
        batch = batch.to(self.device)
        batch = F.interpolate(batch, size=self.cfg.size, mode="bilinear", align_corners=False)  # expect: any
        batch = batch.float().div_(255.0)
        return (batch - self.mean) / self.std


class SceneClassifier(nn.Module):
    def __init__(self, num_classes=6):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.body(x))


def fake_video_frames(n, rng):
    frames = []
    for _ in range(n):
        h, w = rng.integers(90, 140), rng.integers(120, 180)
        frames.append(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8))
    return frames


def crop_to_common(frames):
    h = min(f.shape[0] for f in frames)
    w = min(f.shape[1] for f in frames)
    return [f[:h, :w] for f in frames]


@torch.no_grad()
def classify_clips(model, preprocess, clips):
    results = []
    for clip in clips:
        x = preprocess(crop_to_common(clip))
        probs = model(x).softmax(dim=-1).mean(dim=0)
        results.append(probs)
    return torch.stack(results)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SceneClassifier().to(device).eval()
    preprocess = GpuPreprocessor(PreprocessConfig(), device)
    clips = [fake_video_frames(8, rng) for _ in range(4)]
    scores = classify_clips(model, preprocess, clips)
    top = scores.argmax(dim=-1).cpu().tolist()
    print("clip predictions:", top)


if __name__ == "__main__":
    main()
