# source: https://github.com/Tramac/torchscope/issues/2
# area: transfer & sync
# bug: per-layer forward times are read with a host clock in hooks while CUDA kernels are still queued, so the summary reports launch time instead of execution time
import time
from collections import OrderedDict

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LayerTimer:
    def __init__(self, model):
        self.model = model
        self.records = OrderedDict()
        self._start = {}
        self._hooks = []
        self._names = {}

    def attach(self):
        for name, module in self.model.named_modules():
            if len(list(module.children())) == 0:
                self._names[module] = name or module.__class__.__name__
                self._hooks.append(module.register_forward_pre_hook(self._pre))
                self._hooks.append(module.register_forward_hook(self._post))

    def detach(self):
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    def _pre(self, module, inputs):
        self._start[module] = time.perf_counter()  # expect[t]: any

    def _post(self, module, inputs, output):
        elapsed = time.perf_counter() - self._start.pop(module)  # expect[t]: any
        key = self._names[module]
        entry = self.records.setdefault(key, {"calls": 0, "total_ms": 0.0,
                                             "out_shape": None})
        entry["calls"] += 1
        entry["total_ms"] += elapsed * 1000.0
        entry["out_shape"] = tuple(output.shape)

    @torch.no_grad()
    def profile(self, input_size, batch_size=8, warmup=2, repeats=5):
        x = torch.rand(batch_size, *input_size, device=device)
        self.model.eval()
        for _ in range(warmup):
            self.model(x)
        self.records.clear()
        self.attach()
        try:
            for _ in range(repeats):
                self.model(x)
        finally:
            self.detach()
        return self.records

    def show(self):
        print(f"{'layer':<14}{'output shape':>24}{'avg ms':>10}")
        total = 0.0
        for name, e in self.records.items():
            avg = e["total_ms"] / e["calls"]
            total += avg
            print(f"{name:<14}{str(e['out_shape']):>24}{avg:>10.3f}")
        print(f"{'total':<14}{'':>24}{total:>10.3f}")


def build_backbone():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
    )


def main():
    torch.manual_seed(0)
    model = build_backbone().to(device)
    timer = LayerTimer(model)
    timer.profile((3, 64, 64), batch_size=8)
    timer.show()


if __name__ == "__main__":
    main()
