# source: https://github.com/voxel51/fiftyone/pull/6594
# area: device placement
# bug: normalize_tensor builds mean/std on the default (CPU) device, but the predictor hands it a batch already moved to the GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def to_chw_float(img_np):
    if img_np.ndim == 2:
        img_np = np.repeat(img_np[..., None], 3, axis=2)
    return torch.from_numpy(np.ascontiguousarray(img_np.transpose(2, 0, 1))).float() / 255.0


def normalize_tensor(img_t, mean, std):
    mean_t = torch.tensor(mean, dtype=img_t.dtype)  # expect[w]: any
    std_t = torch.tensor(std, dtype=img_t.dtype)  # expect[w]: any
    return (img_t - mean_t.view(-1, 1, 1)) / std_t.view(-1, 1, 1)


class TinyKeypointNet(nn.Module):
    def __init__(self, num_joints=17):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.heatmaps = nn.Conv2d(32, num_joints, 1)

    def forward(self, x):
        return self.heatmaps(self.features(x))


class KeypointPredictor:
    def __init__(self, model, input_size=(128, 96), device=None):
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = model.to(self.device).eval()
        self.input_size = input_size

    def _resize(self, img_np):
        img_t = to_chw_float(img_np)
        return F.interpolate(img_t[None], size=self.input_size, mode="bilinear", align_corners=False)[0]

    @torch.inference_mode()
    def predict_all(self, images):
        batch = torch.stack([self._resize(im) for im in images]).to(self.device)
        batch = normalize_tensor(batch, IMAGENET_MEAN, IMAGENET_STD)
        heat = self.model(batch)
        n, j, h, w = heat.shape
        flat = heat.view(n, j, -1)
        score, idx = flat.max(dim=-1)
        coords = torch.stack([idx % w, idx // w], dim=-1).float()
        scale = torch.tensor([self.input_size[1] / w, self.input_size[0] / h], device=heat.device)
        return (coords * scale).cpu().numpy(), score.sigmoid().cpu().numpy()


def main():
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, size=(rng.integers(100, 200), rng.integers(80, 160), 3), dtype=np.uint8)
              for _ in range(6)]
    predictor = KeypointPredictor(TinyKeypointNet())
    keypoints, scores = predictor.predict_all(images)
    for i, (kp, sc) in enumerate(zip(keypoints, scores)):
        print(f"image {i}: first joint at {kp[0].round(1)}, mean score {sc.mean():.3f}")


if __name__ == "__main__":
    main()
