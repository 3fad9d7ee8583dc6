# source: https://github.com/mark1879/Baichuan-13B-Finetuning/issues/21
# area: AMP
# bug: on CUDA the base model is cast with .half() before fine-tuning while an fp16 GradScaler is enabled, so every trainable parameter gets fp16 grads and scaler.unscale_() raises "Attempting to unscale FP16 gradients"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class FinetuneConfig:
    vocab_size: int = 128
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 32
    batch_size: int = 4
    lr: float = 2e-4
    steps: int = 4
    fp16: bool = torch.cuda.is_available()


class TinyCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(1, cfg.seq_len, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, 4 * cfg.d_model, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, ids):
        t = ids.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
        h = self.embed(ids) + self.pos[:, :t]
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.lm_head(h)


def load_base_model(cfg, device):
    model = TinyCausalLM(cfg)
    if device.type == "cuda":
        model = model.half()  # expect[half]: any
    return model.to(device)


def synthetic_corpus(cfg, n_batches=3):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len + 1), generator=g) for _ in range(n_batches)]


def finetune(cfg, device):
    model = load_base_model(cfg, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, eps=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.fp16)  # expect[half]: any
    corpus = synthetic_corpus(cfg)
    model.train()
    total = torch.zeros((), device=device)
    for step in range(cfg.steps):
        batch = corpus[step % len(corpus)].to(device)
        inputs, labels = batch[:, :-1], batch[:, 1:]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=cfg.fp16):
            logits = model(inputs)
            loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), labels.reshape(-1))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        total += loss.detach()
    return (total / cfg.steps).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = FinetuneConfig()
    avg = finetune(cfg, device)
    print(f"avg loss {avg:.4f}  ppl {math.exp(avg):.1f}")
