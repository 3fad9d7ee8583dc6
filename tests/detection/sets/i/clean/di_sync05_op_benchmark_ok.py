# twin of: bugs/di_sync05_op_benchmark.py
# area: transfer & sync
# correct: the device is synchronized before starting and before stopping the wall-clock timer, so GPU timings cover kernel execution
import time
import torch
import torch.nn.functional as F


def make_inputs(device, size=256):
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(size, size, generator=g).to(device)
    b = torch.randn(size, size, generator=g).to(device)
    img = torch.randn(4, 16, 32, 32, generator=g).to(device)
    w = torch.randn(32, 16, 3, 3, generator=g).to(device)
    idx = torch.randint(0, size, (size, size), generator=g).to(device)
    return {"a": a, "b": b, "img": img, "w": w, "idx": idx}


def build_ops(t):
    return {
        "matmul": lambda: t["a"] @ t["b"],
        "softmax": lambda: F.softmax(t["a"], dim=-1),
        "conv2d": lambda: F.conv2d(t["img"], t["w"], padding=1),
        "gather": lambda: torch.gather(t["a"], 1, t["idx"]),
        "sort": lambda: torch.sort(t["a"], dim=-1),
        "sum_all": lambda: t["a"].sum(),
        "concat": lambda: torch.cat([t["a"], t["b"]], dim=0),
    }


class OpBenchmark:
    def __init__(self, device, warmup=3, iters=10):
        self.device = device
        self.warmup = warmup
        self.iters = iters

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def time_op(self, fn):
        for _ in range(self.warmup):
            fn()
        self._sync()
        start = time.perf_counter()
        for _ in range(self.iters):
            fn()
        self._sync()
        elapsed = time.perf_counter() - start
        return elapsed * 1e3 / self.iters

    def run(self, ops):
        return {name: self.time_op(fn) for name, fn in ops.items()}


def report(results, device):
    width = max(len(k) for k in results)
    print(f"device: {device}")
    print(f"{'op'.ljust(width)} | mean ms")
    print("-" * (width + 12))
    for name, ms in sorted(results.items(), key=lambda kv: kv[1]):
        print(f"{name.ljust(width)} | {ms:8.3f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tensors = make_inputs(device)
    bench = OpBenchmark(device)
    results = bench.run(build_ops(tensors))
    report(results, device)


if __name__ == "__main__":
    main()
