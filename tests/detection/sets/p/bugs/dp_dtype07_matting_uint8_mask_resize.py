# source: https://github.com/yucornetto/MGMatting/issues/4
# area: dtype
# bug: the uint8 guidance mask from numpy is moved to the GPU and resized with bilinear F.interpolate, which has a uint8 kernel on CPU but none on CUDA
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GuidedMattingNet(nn.Module):
    """Image + coarse mask in, alpha at 1/4 and full resolution out."""

    def __init__(self, ch=16):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(4, ch, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(ch, 2 * ch, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.head_os4 = nn.Conv2d(2 * ch, 1, 3, padding=1)
        self.refine = nn.Sequential(nn.Conv2d(5, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, 1, 3, padding=1))

    def forward(self, image, mask):
        feats = self.enc(torch.cat([image, mask], dim=1))
        alpha_os4 = torch.sigmoid(self.head_os4(feats))
        up = F.interpolate(alpha_os4, size=image.shape[-2:], mode="bilinear", align_corners=False)
        alpha_os1 = torch.sigmoid(self.refine(torch.cat([image, mask, up], dim=1)))
        return alpha_os4, alpha_os1


def unknown_region(alpha, width=3):
    band = ((alpha > 1.0 / 255) & (alpha < 1 - 1.0 / 255)).float()
    return F.max_pool2d(band, 2 * width + 1, stride=1, padding=width)


class MattingPredictor:
    def __init__(self, model, stride=32):
        self.model = model.to(device).eval()
        self.stride = stride

    def preprocess(self, image_np, mask_np):
        h, w = image_np.shape[:2]
        th, tw = (h // self.stride + 1) * self.stride, (w // self.stride + 1) * self.stride
        image = torch.from_numpy(image_np).permute(2, 0, 1)[None].to(device).float().div(255)
        image = F.interpolate(image, size=(th, tw), mode="bilinear", align_corners=False)
        mask = torch.from_numpy(mask_np)[None, None].to(device)
        mask = F.interpolate(mask, size=(th, tw), mode="bilinear", align_corners=False)  # expect: any
        mask = mask.float().div(255)
        return image, mask, (h, w)

    @torch.no_grad()
    def __call__(self, image_np, mask_np):
        image, mask, (h, w) = self.preprocess(image_np, mask_np)
        alpha_os4, alpha_os1 = self.model(image, mask)
        coarse = F.interpolate(alpha_os4, size=image.shape[-2:], mode="bilinear", align_corners=False)
        weight = unknown_region(coarse)
        alpha = torch.where(weight > 0, alpha_os1, coarse)
        alpha = F.interpolate(alpha, size=(h, w), mode="bilinear", align_corners=False)
        return (alpha[0, 0].clamp(0, 1) * 255).round().to(torch.uint8).cpu().numpy()


def synthetic_pair(h=90, w=120, seed=0):
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:h, :w]
    mask = (((yy - h / 2) ** 2 + (xx - w / 2) ** 2) < (min(h, w) / 3) ** 2).astype(np.uint8) * 255
    return image, mask


if __name__ == "__main__":
    torch.manual_seed(0)
    predictor = MattingPredictor(GuidedMattingNet())
    for seed in range(3):
        img, msk = synthetic_pair(seed=seed)
        alpha = predictor(img, msk)
        print(f"image {seed}: alpha {alpha.shape}, foreground fraction {(alpha > 127).mean():.3f}")
