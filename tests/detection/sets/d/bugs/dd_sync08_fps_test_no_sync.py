# source: https://github.com/pytorch/pytorch/issues/18012
# area: transfer & sync
# bug: the per-frame latency is read from the host clock right after the asynchronous forward call without synchronizing, so the FPS reported on a GPU only measures kernel launches
import time

import numpy as np
import torch
import torch.nn as nn


class ConvBNReLU(nn.Sequential):
    def __init__(self, cin, cout, stride=1, dilation=1):
        super().__init__(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )


class ContextNet(nn.Module):
    """Small real-time segmentation network: strided encoder, dilated context, upsampling head."""

    def __init__(self, num_classes=19, width=16):
        super().__init__()
        self.encoder = nn.Sequential(
            ConvBNReLU(3, width, stride=2),
            ConvBNReLU(width, width * 2, stride=2),
            ConvBNReLU(width * 2, width * 4, stride=2),
        )
        self.context = nn.Sequential(*[ConvBNReLU(width * 4, width * 4, dilation=d) for d in (1, 2, 4)])
        self.classifier = nn.Conv2d(width * 4, num_classes, 1)

    def forward(self, x):
        size = x.shape[-2:]
        feats = self.context(self.encoder(x))
        return nn.functional.interpolate(self.classifier(feats), size=size, mode="bilinear", align_corners=False)


@torch.no_grad()
def test_speed(model, device, resolution=(128, 128), iterations=20, warmup=5):
    model.eval()
    data = torch.randn(1, 3, *resolution, device=device)
    times = []
    for i in range(iterations):
        start = time.perf_counter()
        output = model(data)
        elapsed = time.perf_counter() - start  # expect: any
        if i >= warmup:
            times.append(elapsed)
    mean_time = float(np.mean(times))
    return output.shape, mean_time, 1.0 / mean_time


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    model = ContextNet().to(device)
    shape, mean_time, fps = test_speed(model, device)
    print(f"output {tuple(shape)}  mean time: {mean_time * 1000:.2f} ms  FPS: {fps:.1f}")


if __name__ == "__main__":
    main()
