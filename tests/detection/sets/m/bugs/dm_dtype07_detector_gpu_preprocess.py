# source: https://github.com/roboflow/inference/pull/2477
# area: dtype
# bug: the CUDA fast path uploads the numpy frame as a uint8 tensor and resizes/normalizes it without the float32 cast and /255 that the CPU path does, so the GPU path fails on the uint8 tensor (bilinear resize or normalize_tensor)
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class PreprocConfig:
    target_size: tuple = (224, 224)
    mean: tuple = (0.485, 0.456, 0.406)
    std: tuple = (0.229, 0.224, 0.225)


def normalize_tensor(img, mean, std):
    if not img.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {img.dtype}.")
    return (img - mean) / std


class DetectorPreprocessor:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.mean = torch.tensor(cfg.mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(cfg.std, device=device).view(1, 3, 1, 1)

    def _cpu_path(self, np_img):
        img = torch.from_numpy(np_img.astype(np.float32) / 255.0).permute(2, 0, 1)[None]
        img = F.interpolate(img, size=self.cfg.target_size, mode="bilinear", align_corners=False)
        return normalize_tensor(img, self.mean.cpu(), self.std.cpu()).to(self.device)

    def _gpu_path(self, np_img):
        img = torch.from_numpy(np.ascontiguousarray(np_img)).to(self.device).permute(2, 0, 1)[None]  # expect: any
        img = F.interpolate(img, size=self.cfg.target_size, mode="bilinear", align_corners=False)
        return normalize_tensor(img, self.mean, self.std)

    def __call__(self, np_img):
        if self.device.type == "cuda":
            return self._gpu_path(np_img)
        return self._cpu_path(np_img)


class TinyDetector(nn.Module):
    def __init__(self, num_queries=20, num_classes=10):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 7, stride=4, padding=3), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.boxes = nn.Linear(64, num_queries * 4)
        self.logits = nn.Linear(64, num_queries * num_classes)
        self.num_queries, self.num_classes = num_queries, num_classes

    def forward(self, x):
        f = self.backbone(x)
        boxes = self.boxes(f).sigmoid().view(-1, self.num_queries, 4)
        logits = self.logits(f).view(-1, self.num_queries, self.num_classes)
        return boxes, logits


@torch.no_grad()
def run_inference(model, preproc, frames, conf=0.1):
    outputs = []
    for frame in frames:
        boxes, logits = model(preproc(frame))
        scores, labels = logits.softmax(-1).max(-1)
        outputs.append((boxes[0], scores[0], labels[0]))
    results = []
    for boxes, scores, labels in outputs:
        boxes, scores, labels = boxes.cpu(), scores.cpu(), labels.cpu()
        keep = scores > conf
        results.append((boxes[keep], scores[keep], labels[keep]))
    return results


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (480, 640, 3), dtype=np.uint8) for _ in range(4)]
    model = TinyDetector().to(device).eval()
    preproc = DetectorPreprocessor(PreprocConfig(), device)
    detections = run_inference(model, preproc, frames)
    print("detections per frame:", [len(d[0]) for d in detections])


if __name__ == "__main__":
    main()
