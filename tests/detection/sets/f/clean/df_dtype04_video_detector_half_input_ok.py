# twin of: bugs/df_dtype04_video_detector_half_input.py
# area: dtype
# correct: frames are cast to float16 when the detector weights are float16 and to float32 otherwise, so input and weight dtypes always match
import numpy as np
import torch
import torch.nn as nn


class TinyYolo(nn.Module):
    def __init__(self, num_classes=3, anchors=2):
        super().__init__()
        self.num_classes = num_classes
        self.anchors = anchors

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1))

        self.backbone = nn.Sequential(block(3, 16), block(16, 32), block(32, 64))
        self.head = nn.Conv2d(64, anchors * (5 + num_classes), 1)

    def forward(self, x):
        p = self.head(self.backbone(x))
        b, _, h, w = p.shape
        p = p.view(b, self.anchors, 5 + self.num_classes, h, w).permute(0, 1, 3, 4, 2)
        return p.reshape(b, -1, 5 + self.num_classes)


def letterbox(frame, size=96):
    h, w = frame.shape[:2]
    scale = size / max(h, w)
    nh, nw = int(round(h * scale)), int(round(w * scale))
    ys = (np.arange(nh) / scale).astype(np.int64).clip(0, h - 1)
    xs = (np.arange(nw) / scale).astype(np.int64).clip(0, w - 1)
    canvas = np.full((size, size, 3), 128, dtype=np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    canvas[top : top + nh, left : left + nw] = frame[ys][:, xs]
    return canvas


class VideoDetector:
    def __init__(self, model, device, conf_thres=0.26):
        self.device = device
        self.half = device.type == "cuda"
        self.conf_thres = conf_thres
        self.model = model.to(device).eval()
        if self.half:
            self.model.half()

    def preprocess(self, frame):
        img = letterbox(frame)[:, :, ::-1].transpose(2, 0, 1)
        img = torch.from_numpy(np.ascontiguousarray(img)).to(self.device)
        img = (img.half() if self.half else img.float()) / 255.0
        return img.unsqueeze(0)

    @torch.no_grad()
    def detect(self, frame):
        pred = self.model(self.preprocess(frame))[0].float().cpu()
        conf = pred[:, 4].sigmoid() * pred[:, 5:].sigmoid().max(dim=1).values
        keep = conf > self.conf_thres
        return pred[keep, :4], conf[keep]


def fake_video(n_frames=6, h=120, w=160, seed=0):
    rng = np.random.default_rng(seed)
    for i in range(n_frames):
        frame = rng.integers(0, 255, size=(h, w, 3), dtype=np.uint8)
        frame[20 + i * 5 : 60 + i * 5, 40:90] = (30, 200, 60)
        yield frame


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    detector = VideoDetector(TinyYolo(), device, conf_thres=0.26)
    total = 0
    for idx, frame in enumerate(fake_video()):
        boxes, scores = detector.detect(frame)
        total += len(scores)
        print(f"frame {idx}: {len(scores)} detections")
    print("total detections:", total)


if __name__ == "__main__":
    main()
