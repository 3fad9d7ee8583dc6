# source: https://github.com/pytorch/pytorch/pull/134291
# area: AMP
# bug: the autocast context is chosen by comparing the device string with "cuda", but the configured device is "cuda:0", so GPU runs get CPU autocast and silently train in full fp32 (no tensor-core speedup, GradScaler scaling fp32 grads)
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class RunConfig:
    device: str = "cuda:0" if torch.cuda.is_available() else "cpu"
    mixed_precision: bool = True
    image_size: int = 32
    channels: list = field(default_factory=lambda: [3, 32, 64, 128])
    num_classes: int = 10
    batch_size: int = 32
    steps: int = 3


def amp_context(device, enabled):
    if str(device) == "cuda":  # expect: any
        return torch.autocast(device_type="cuda", dtype=torch.float16, enabled=enabled)
    return torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False)


class SmallResNet(nn.Module):
    def __init__(self, channels, num_classes):
        super().__init__()
        blocks = []
        for cin, cout in zip(channels[:-1], channels[1:]):
            blocks += [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*blocks)
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def run(cfg):
    device = torch.device(cfg.device)
    use_scaler = cfg.mixed_precision and device.type == "cuda"
    model = SmallResNet(cfg.channels, cfg.num_classes).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)
    gen = torch.Generator(device=device).manual_seed(0)
    start = time.perf_counter()
    for _ in range(cfg.steps):
        x = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device, generator=gen)
        x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, cfg.num_classes, (cfg.batch_size,), device=device, generator=gen)
        with amp_context(cfg.device, cfg.mixed_precision):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(f"{cfg.steps} steps in {elapsed:.2f}s, logits dtype {logits.dtype}, final loss {loss.item():.3f}")


if __name__ == "__main__":
    run(RunConfig())
