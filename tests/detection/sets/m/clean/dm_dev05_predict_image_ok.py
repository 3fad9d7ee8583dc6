# twin of: bugs/dm_dev05_predict_image.py
# area: device placement
# correct: the predict helper moves the image tensor to the device of the detector's parameters before the forward pass
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyBoxDetector(nn.Module):
    """Dense single-scale detector: one box + score per feature cell."""

    def __init__(self, stride=8):
        super().__init__()
        self.stride = stride
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.box_head = nn.Conv2d(32, 4, 1)
        self.cls_head = nn.Conv2d(32, 1, 1)

    def forward(self, images):
        feats = self.backbone(images)
        n, _, h, w = feats.shape
        ys, xs = torch.meshgrid(
            torch.arange(h, device=feats.device), torch.arange(w, device=feats.device), indexing="ij"
        )
        centers = torch.stack([xs, ys], dim=-1).reshape(-1, 2).float() * self.stride + self.stride / 2
        wh = self.box_head(feats).permute(0, 2, 3, 1).reshape(n, -1, 4)[..., 2:].exp() * self.stride
        boxes = torch.cat([centers - wh / 2, centers + wh / 2], dim=-1)
        scores = self.cls_head(feats).sigmoid().reshape(n, -1)
        return [{"boxes": b, "scores": s} for b, s in zip(boxes, scores)]


def _predict_image_(model, image, nms_thresh=0.05, score_thresh=0.3, max_dets=50):
    image = torch.tensor(image).permute(2, 0, 1)
    image = image.to(next(model.parameters()).device)
    image = image.float() / 255
    with torch.no_grad():
        prediction = model(image.unsqueeze(0))[0]
    keep = prediction["scores"] > score_thresh
    boxes, scores = prediction["boxes"][keep], prediction["scores"][keep]
    order = scores.argsort(descending=True)[:max_dets]
    boxes, scores = boxes[order].cpu().numpy(), scores[order].cpu().numpy()
    return [
        {"xmin": b[0], "ymin": b[1], "xmax": b[2], "ymax": b[3], "score": s, "label": "Tree"}
        for b, s in zip(boxes, scores)
    ]


class TreeCrownPredictor:
    def __init__(self):
        self.model = TinyBoxDetector()
        self.nms_thresh = 0.05

    def load_model(self, state_dict=None):
        if state_dict is not None:
            self.model.load_state_dict(state_dict)
        self.model.eval()
        return self

    def predict_image(self, image):
        if image.dtype != np.uint8:
            raise ValueError("expected an RGB uint8 array")
        return _predict_image_(self.model, image, nms_thresh=self.nms_thresh)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    predictor = TreeCrownPredictor().load_model()
    predictor.model.to(device)
    tile = rng.integers(0, 256, size=(128, 128, 3), dtype=np.uint8)
    detections = predictor.predict_image(tile)
    print(f"{len(detections)} crowns detected")
    for det in detections[:3]:
        print({k: (round(float(v), 1) if k != "label" else v) for k, v in det.items()})


if __name__ == "__main__":
    main()
