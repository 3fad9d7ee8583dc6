# source: https://github.com/ayooshkathuria/pytorch-yolo-v3/issues/123
# area: AMP
# bug: on CUDA the detector is converted with model.half(), but the warm-up input from get_test_input stays float32, so the first forward fails with "Input type (torch.cuda.FloatTensor) and weight type (torch.cuda.HalfTensor) should be the same"
import argparse

import numpy as np
import torch
import torch.nn as nn


def conv_bn(c_in, c_out, k=3, s=1):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1))


class MiniDarknet(nn.Module):
    def __init__(self, num_classes=3, anchors=3):
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 16), conv_bn(16, 32, s=2), conv_bn(32, 64, s=2), conv_bn(64, 64, s=2))
        self.detect = nn.Conv2d(64, anchors * (5 + num_classes), 1)
        self.no = 5 + num_classes

    def forward(self, x):
        p = self.detect(self.features(x))
        b, _, h, w = p.shape
        p = p.view(b, -1, self.no, h, w).permute(0, 1, 3, 4, 2).reshape(b, -1, self.no)
        return torch.cat([p[..., :4], p[..., 4:].sigmoid()], dim=-1)


def parse_args():
    parser = argparse.ArgumentParser(description="video detection demo")
    parser.add_argument("--reso", type=int, default=96)
    parser.add_argument("--confidence", type=float, default=0.5)
    parser.add_argument("--frames", type=int, default=4)
    return parser.parse_args([])


def get_test_input(inp_dim, device):
    img = np.random.randint(0, 255, (inp_dim, inp_dim, 3), dtype=np.uint8)
    img = torch.from_numpy(img[:, :, ::-1].transpose(2, 0, 1).copy()).float().div(255.0)
    return img.unsqueeze(0).to(device)  # expect[warm]: any


def prep_frame(frame, device, half):
    t = torch.from_numpy(frame).permute(2, 0, 1).unsqueeze(0).to(device)
    t = t.half() if half else t.float()
    return t / 255.0


def main():
    args = parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    half = device.type == "cuda"
    model = MiniDarknet().to(device).eval()
    if half:
        model.half()
    with torch.no_grad():
        model(get_test_input(args.reso, device))  # expect[warm]: any
        detections = []
        for _ in range(args.frames):
            frame = np.random.randint(0, 255, (args.reso, args.reso, 3), dtype=np.uint8)
            out = model(prep_frame(frame, device, half))
            keep = out[..., 4] > args.confidence
            detections.append(keep.sum())
    counts = torch.stack(detections).tolist()
    print("boxes above threshold per frame:", counts)


if __name__ == "__main__":
    main()
