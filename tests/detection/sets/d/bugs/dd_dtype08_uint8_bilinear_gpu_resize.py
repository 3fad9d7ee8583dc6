# source: https://github.com/intel/torch-xpu-ops/pull/2978
# area: dtype
# bug: the GPU preprocessing resizes raw uint8 frames with bilinear interpolate; CPU has a native uint8 bilinear kernel but CUDA does not ("not implemented for 'Byte'")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class GpuPreprocess:
    """Resize + normalize uint8 HWC frames on the accelerator, torchvision-style."""

    def __init__(self, size, mean, std, device):
        self.size = size
        self.device = device
        self.mean = torch.tensor(mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=device).view(1, 3, 1, 1)

    def __call__(self, frames_u8):
        x = torch.from_numpy(frames_u8).to(self.device)
        x = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        x = F.interpolate(x, size=self.size, mode="bilinear", align_corners=False, antialias=True)  # expect: any
        x = x.float().div_(255.0)
        return (x - self.mean) / self.std


class FrameClassifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def decode_video_chunk(num_frames, height, width, seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(1, height, width, 3), dtype=np.uint8)
    noise = rng.integers(0, 20, size=(num_frames, height, width, 3), dtype=np.uint8)
    return base + noise


@torch.no_grad()
def classify_stream(model, preprocess, num_chunks=4):
    model.eval()
    votes = []
    for chunk_id in range(num_chunks):
        frames = decode_video_chunk(8, 180, 320, seed=chunk_id)
        batch = preprocess(frames)
        votes.append(model(batch).argmax(dim=-1))
    return torch.cat(votes).bincount(minlength=3).cpu()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    preprocess = GpuPreprocess((112, 112), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), device)
    model = FrameClassifier().to(device)
    print("frame votes per class:", classify_stream(model, preprocess).tolist())


if __name__ == "__main__":
    main()
