# source: https://github.com/datawhalechina/happy-llm/pull/215
# area: AMP
# bug: the run is configured for bfloat16 but the CUDA autocast context is built without a dtype, so it silently runs float16 with no GradScaler and small gradients underflow
import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class PretrainArgs:
    vocab_size: int = 128
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 32
    batch_size: int = 8
    steps: int = 6
    lr: float = 3e-4
    warmup: int = 2
    dtype: str = "bfloat16"
    grad_clip: float = 1.0


class MiniLM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok = nn.Embedding(a.vocab_size, a.dim)
        self.pos = nn.Parameter(torch.zeros(1, a.seq_len, a.dim))
        layer = nn.TransformerEncoderLayer(a.dim, a.n_heads, 4 * a.dim, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, a.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(a.dim)
        self.lm_head = nn.Linear(a.dim, a.vocab_size, bias=False)
        self.register_buffer("causal", torch.triu(torch.full((a.seq_len, a.seq_len), float("-inf")), 1))

    def forward(self, idx, targets):
        h = self.tok(idx) + self.pos[:, : idx.shape[1]]
        h = self.blocks(h, mask=self.causal, is_causal=True)
        logits = self.lm_head(self.norm(h))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def get_lr(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    return 0.5 * a.lr * (1 + math.cos(math.pi * (step - a.warmup) / max(1, a.steps - a.warmup)))


def build_amp(args, device):
    device_type = "cuda" if device.type == "cuda" else "cpu"
    ctx = nullcontext() if device_type == "cpu" else torch.autocast(device_type=device_type)  # expect: any
    scaler = torch.amp.GradScaler("cuda", enabled=(device_type == "cuda" and args.dtype == "float16"))
    return ctx, scaler


def pretrain(args, device):
    model = MiniLM(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95))
    ctx, scaler = build_amp(args, device)
    data = torch.randint(0, args.vocab_size, (args.steps, args.batch_size, args.seq_len + 1))
    losses = []
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = get_lr(step, args)
        batch = data[step].to(device)
        with ctx:
            loss = model(batch[:, :-1], batch[:, 1:])
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    return torch.stack(losses)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    losses = pretrain(PretrainArgs(), device)
    print("loss curve:", [round(v, 3) for v in losses.float().cpu().tolist()])
