# twin of: bugs/dk_sync05_throughput_probe_nosync.py
# area: transfer & sync
# correct: the probe synchronizes the device once before starting and once before stopping the clock, so it times the finished GPU work
import time
from dataclasses import dataclass

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class ServerInfo:
    block_indices: tuple
    compute_rps: float = 0.0
    dtype: str = "float32"


class DecoderBlock(nn.Module):
    def __init__(self, dim=256, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def measure_compute_rps(block, device, dtype, hidden_size=256, n_tokens=256, n_steps=10, warmup=2):
    block = block.to(device=device, dtype=dtype).eval()
    dummy = torch.randn(1, n_tokens, hidden_size, device=device, dtype=dtype)
    with torch.inference_mode():
        for _ in range(warmup):
            block(dummy)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(n_steps):
            block(dummy)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - start
    return n_tokens * n_steps / elapsed


class BlockServer:
    def __init__(self, first_block, num_blocks, hidden_size=256):
        self.hidden_size = hidden_size
        self.blocks = nn.ModuleList(DecoderBlock(hidden_size) for _ in range(num_blocks))
        self.info = ServerInfo(block_indices=tuple(range(first_block, first_block + num_blocks)))

    def benchmark(self):
        rps = [measure_compute_rps(b, device, torch.float32, self.hidden_size) for b in self.blocks]
        self.info.compute_rps = min(rps)
        return self.info

    def announce(self):
        info = self.benchmark()
        print(f"serving blocks {info.block_indices} at {info.compute_rps:.0f} tokens/s ({info.dtype})")
        return info

    @torch.inference_mode()
    def forward(self, hidden):
        for block in self.blocks:
            hidden = block(hidden)
        return hidden


def main():
    torch.manual_seed(0)
    server = BlockServer(first_block=4, num_blocks=2)
    server.announce()
    out = server.forward(torch.randn(2, 16, 256, device=device))
    print("output", tuple(out.shape))


if __name__ == "__main__":
    main()
