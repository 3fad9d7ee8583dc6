# source: https://github.com/saifhaq/alma/pull/114
# area: transfer & sync
# bug: batches are copied with non_blocking=True but the DataLoader does not pin memory, so every copy is a synchronous pageable transfer
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class BenchmarkConfig:
    n_samples: int = 1024
    batch_size: int = 64
    num_workers: int = 0
    warmup_batches: int = 2


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        )
        self.head = nn.Linear(32 * 16, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def build_loader(config):
    data = torch.rand(config.n_samples, 1, 28, 28)
    labels = torch.randint(0, 10, (config.n_samples,))
    dataset = TensorDataset(data, labels)
    return DataLoader(dataset, batch_size=config.batch_size, shuffle=False, num_workers=config.num_workers)  # expect[w]: any


@torch.no_grad()
def benchmark(model, loader, device, config):
    model.eval()
    it = iter(loader)
    for _ in range(config.warmup_batches):
        data, _ = next(it)
        model(data.to(device))
    if device.type == "cuda":
        torch.cuda.synchronize()

    n_samples = 0
    start = time.perf_counter()
    for data, _ in loader:
        data = data.to(device, non_blocking=True)  # expect[w]: any
        output = model(data)
        n_samples += output.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return {"total_time_s": elapsed, "samples": n_samples, "throughput": n_samples / elapsed}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = BenchmarkConfig()
    model = SmallConvNet().to(device)
    loader = build_loader(config)
    results = benchmark(model, loader, device, config)
    print(f"Device: {device}")
    print(f"Total elapsed time: {results['total_time_s']:.4f} s")
    print(f"Total samples: {results['samples']} - Batch size: {config.batch_size}")
    print(f"Throughput: {results['throughput']:.1f} samples/second")


if __name__ == "__main__":
    main()
