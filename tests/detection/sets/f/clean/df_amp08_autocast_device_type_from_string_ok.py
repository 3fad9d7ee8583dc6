# twin of: bugs/df_amp08_autocast_device_type_from_string.py
# area: AMP
# correct: device_type is taken from torch.device(cfg.device).type, so "cuda:0" maps to CUDA autocast and the GPU run really uses bfloat16
import math
from contextlib import nullcontext
from dataclasses import dataclass
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainConfig:
    device: str = "cuda:0" if torch.cuda.is_available() else "cpu"
    dtype: str = "bfloat16"
    block_size: int = 32
    vocab_size: int = 96
    n_embd: int = 48
    n_head: int = 4
    batch_size: int = 8
    max_iters: int = 8
    lr: float = 1e-3


class CausalBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = nn.MultiheadAttention(cfg.n_embd, cfg.n_head, batch_first=True)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(), nn.Linear(4 * cfg.n_embd, cfg.n_embd))
        mask = torch.triu(torch.ones(cfg.block_size, cfg.block_size, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        t = x.size(1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class MiniGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.Sequential(CausalBlock(cfg), CausalBlock(cfg))
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        logits = self.head(self.blocks(self.tok(idx) + self.pos(pos)))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def get_batch(data, cfg, device):
    ix = torch.randint(len(data) - cfg.block_size - 1, (cfg.batch_size,))
    x = torch.stack([data[i:i + cfg.block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + cfg.block_size] for i in ix])
    return x.to(device), y.to(device)


def main():
    cfg = TrainConfig()
    torch.manual_seed(1337)
    device_type = torch.device(cfg.device).type
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg.dtype]
    ctx = nullcontext() if device_type == "cpu" else torch.autocast(device_type=device_type, dtype=ptdtype)
    scaler = torch.amp.GradScaler("cuda", enabled=(cfg.dtype == "float16" and device_type == "cuda"))
    data = torch.randint(0, cfg.vocab_size, (4096,))
    model = MiniGPT(cfg).to(cfg.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    running = torch.zeros((), device=cfg.device)
    for it in range(cfg.max_iters):
        lr = cfg.lr * 0.5 * (1 + math.cos(math.pi * it / cfg.max_iters))
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(data, cfg, cfg.device)
        with ctx:
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        running += loss.detach()
    print(f"mean train loss {(running / cfg.max_iters).item():.4f} on {cfg.device} ({device_type} autocast)")


if __name__ == "__main__":
    main()
