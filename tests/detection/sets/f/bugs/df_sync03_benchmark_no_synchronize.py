# source: https://www.speechmatics.com/company/articles-and-news/timing-operations-in-pytorch
# area: transfer & sync
# bug: wall-clock timing of CUDA work without torch.cuda.synchronize() measures only kernel launches, so reported latencies are wrong on a GPU
import time
from dataclasses import dataclass

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class BenchConfig:
    batch_size: int = 8
    seq_len: int = 64
    d_model: int = 128
    n_heads: int = 4
    warmup: int = 3
    iters: int = 10


class Block(nn.Module):
    def __init__(self, d_model, n_heads, use_sdpa=True):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.use_sdpa = use_sdpa
        self.n_heads = n_heads
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x):
        h = self.ln1(x)
        if self.use_sdpa:
            b, t, d = h.shape
            qkv = nn.functional.linear(h, self.attn.in_proj_weight, self.attn.in_proj_bias)
            q, k, v = qkv.view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
            a = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
            a = self.attn.out_proj(a)
        else:
            a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.ff(self.ln2(x))


@torch.inference_mode()
def time_forward(model, x, cfg):
    for _ in range(cfg.warmup):
        model(x)
    timings = []
    for _ in range(cfg.iters):
        start = time.perf_counter()  # expect[t]: any
        model(x)
        timings.append((time.perf_counter() - start) * 1e3)  # expect[t]: any
    timings.sort()
    return timings[len(timings) // 2]


def run_benchmark(cfg):
    x = torch.randn(cfg.batch_size, cfg.seq_len, cfg.d_model, device=device)
    results = {}
    for name, use_sdpa in [("nn.MultiheadAttention", False), ("sdpa", True)]:
        torch.manual_seed(0)
        model = nn.Sequential(*[Block(cfg.d_model, cfg.n_heads, use_sdpa) for _ in range(4)]).to(device).eval()
        results[name] = time_forward(model, x, cfg)
    return results


def main():
    cfg = BenchConfig()
    results = run_benchmark(cfg)
    base = results["nn.MultiheadAttention"]
    print(f"{'variant':<24}{'median ms':>12}{'speedup':>10}")
    for name, ms in results.items():
        print(f"{name:<24}{ms:>12.3f}{base / ms:>10.2f}x")


if __name__ == "__main__":
    main()
