# twin of: bugs/de_amp05_half_model_float_input.py
# area: AMP
# correct: frames are cast to half whenever the model was converted with .half(), so input and weight dtypes match
import numpy as np
import torch
import torch.nn as nn


class TinyDetector(nn.Module):
    def __init__(self, num_classes=3, anchors=2):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
        )
        self.head = nn.Conv2d(32, anchors * (5 + num_classes), 1)
        self.anchors = anchors
        self.num_classes = num_classes

    def forward(self, x):
        p = self.head(self.backbone(x))
        b, _, h, w = p.shape
        p = p.view(b, self.anchors, 5 + self.num_classes, h, w).permute(0, 1, 3, 4, 2)
        return p.reshape(b, -1, 5 + self.num_classes)


def letterbox(frame, size=96):
    h, w, _ = frame.shape
    out = np.full((size, size, 3), 114, dtype=np.uint8)
    out[: min(h, size), : min(w, size)] = frame[:size, :size]
    return out


def read_fake_video(n_frames=6, h=80, w=96, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_frames):
        yield rng.integers(0, 255, size=(h, w, 3), dtype=np.uint8)


class VideoRunner:
    def __init__(self, device, conf_thres=0.5):
        self.device = device
        self.half = device.type == "cuda"
        self.model = TinyDetector().to(device).eval()
        if self.half:
            self.model.half()
        self.conf_thres = conf_thres

    def preprocess(self, frame):
        img = letterbox(frame).transpose(2, 0, 1)
        img = torch.from_numpy(np.ascontiguousarray(img)).to(self.device)
        img = img.half() if self.half else img.float()
        img /= 255.0
        return img.unsqueeze(0)

    @torch.inference_mode()
    def detect(self, frame):
        pred = self.model(self.preprocess(frame))[0].float()
        obj = pred[:, 4].sigmoid()
        return (obj > self.conf_thres).sum()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    runner = VideoRunner(device)
    counts = torch.stack([runner.detect(frame) for frame in read_fake_video()])
    print("detections per frame", counts.tolist())


if __name__ == "__main__":
    main()
