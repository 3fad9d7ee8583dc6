# source: https://discuss.pytorch.org/t/how-to-inference-asynchronous/150999/2
# area: transfer & sync
# bug: the latency benchmark reads the host clock right after launching the forward pass without torch.cuda.synchronize(), so on a GPU it measures kernel launch time and reports far too low latency / too high throughput
import time
import statistics
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class BenchConfig:
    batch_size: int = 8
    image_size: int = 64
    warmup: int = 3
    iters: int = 10
    channels_last: bool = False


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SmallBackbone(nn.Module):
    def __init__(self, width=32, classes=100):
        super().__init__()
        self.features = nn.Sequential(
            ConvBlock(3, width, 2), ConvBlock(width, width),
            ConvBlock(width, 2 * width, 2), ConvBlock(2 * width, 2 * width),
            ConvBlock(2 * width, 4 * width, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4 * width, classes)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


@torch.no_grad()
def measure_latency(model, inputs, warmup, iters):
    for _ in range(warmup):
        model(inputs)
    timings = []
    for _ in range(iters):
        start = time.perf_counter()
        model(inputs)
        timings.append(time.perf_counter() - start)  # expect: any
    return timings


def report(name, timings, batch_size):
    ms = [t * 1000.0 for t in timings]
    median = statistics.median(ms)
    p90 = sorted(ms)[int(0.9 * (len(ms) - 1))]
    print(f"{name}: median {median:.2f} ms, p90 {p90:.2f} ms, "
          f"throughput {batch_size / (median / 1000.0):.1f} img/s")


def main(cfg=BenchConfig()):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallBackbone().to(device).eval()
    inputs = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device)
    if cfg.channels_last:
        model = model.to(memory_format=torch.channels_last)
        inputs = inputs.contiguous(memory_format=torch.channels_last)
    timings = measure_latency(model, inputs, cfg.warmup, cfg.iters)
    report(f"SmallBackbone[{device.type}]", timings, cfg.batch_size)


if __name__ == "__main__":
    main()
