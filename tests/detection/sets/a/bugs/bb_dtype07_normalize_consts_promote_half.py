# source: https://github.com/NVIDIA/apex/issues/764
# area: dtype
# bug: the fp16 GPU inference path converts frames to half, but normalize_batch subtracts/divides float32 mean/std tensors, which promotes the batch back to float32 and the half conv weights then reject it (Input type FloatTensor and weight type HalfTensor)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
half = device.type == "cuda"

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def normalize_batch(x):
    mean = torch.tensor(IMAGENET_MEAN, device=x.device).view(1, 3, 1, 1)  # expect[norm]: any
    std = torch.tensor(IMAGENET_STD, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std  # expect[norm]: any


class TinyDetector(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
        )
        self.cls = nn.Conv2d(32, num_classes, 1)
        self.box = nn.Conv2d(32, 4, 1)

    def forward(self, x):
        f = self.backbone(x)
        return self.cls(f), self.box(f)


class Predictor:
    def __init__(self, model):
        model = model.to(device).eval()
        if half:
            model.half()
        self.model = model

    @torch.no_grad()
    def __call__(self, frames_uint8):
        img = frames_uint8.to(device)
        img = img.half() if half else img.float()
        img /= 255.0
        img = normalize_batch(img)
        cls_map, box_map = self.model(img)
        scores = cls_map.float().sigmoid().amax(dim=(2, 3))
        return scores, box_map.float()


frames = torch.randint(0, 256, (12, 3, 64, 64), dtype=torch.uint8)
loader = DataLoader(TensorDataset(frames), batch_size=4)
predictor = Predictor(TinyDetector())

all_scores = []
for (batch,) in loader:
    scores, boxes = predictor(batch)
    all_scores.append(scores.cpu())
print("score table", torch.cat(all_scores).shape, "boxes", tuple(boxes.shape))
