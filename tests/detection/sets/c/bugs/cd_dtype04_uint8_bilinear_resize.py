# source: https://github.com/aharley/pips2/pull/2
# area: dtype
# bug: bilinear F.interpolate is applied to uint8 frames on the device; CUDA has no uint8 bilinear kernel (works only on CPU)
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ShotBoundaryConfig:
    frame_hw = (96, 128)
    model_hw = (64, 64)
    clip_len = 24
    num_clips = 3
    threshold = 0.9995


def synthetic_clip(cfg, seed):
    rng = np.random.default_rng(seed)
    h, w = cfg.frame_hw
    frames = np.empty((cfg.clip_len, h, w, 3), dtype=np.uint8)
    cut = cfg.clip_len // 2
    base_a = rng.integers(0, 255, size=(h, w, 3))
    base_b = rng.integers(0, 255, size=(h, w, 3))
    for t in range(cfg.clip_len):
        base = base_a if t < cut else base_b
        noise = rng.integers(-8, 9, size=(h, w, 3))
        frames[t] = np.clip(base + noise, 0, 255).astype(np.uint8)
    return frames


class FrameEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def prepare_clip(frames_np, cfg, device):
    frames = torch.from_numpy(frames_np).to(device)
    frames = frames.permute(0, 3, 1, 2).contiguous()
    frames = F.interpolate(frames, size=cfg.model_hw, mode="bilinear", align_corners=False)  # expect: any
    frames = frames.float().div_(255.0)
    mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1)
    return (frames - mean) / std


@torch.no_grad()
def detect_boundaries(encoder, clip, cfg):
    feats = encoder(clip)
    sim = (feats[1:] * feats[:-1]).sum(-1)
    return (sim < cfg.threshold).nonzero().flatten() + 1, sim


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ShotBoundaryConfig()
    torch.manual_seed(0)
    encoder = FrameEncoder().to(device).eval()
    for clip_id in range(cfg.num_clips):
        frames_np = synthetic_clip(cfg, seed=clip_id)
        clip = prepare_clip(frames_np, cfg, device)
        cuts, sim = detect_boundaries(encoder, clip, cfg)
        print(f"clip {clip_id}: cuts at {cuts.tolist()}  min sim {sim.min().item():.5f}")


if __name__ == "__main__":
    main()
