# source: https://github.com/huggingface/transformers/issues/23165
# area: AMP
# bug: the model weights are loaded in float16 on the GPU and then trained with GradScaler, whose unscale_ refuses FP16 gradients (ValueError: Attempting to unscale FP16 gradients)
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class FinetuneConfig:
    vocab_size: int = 512
    d_model: int = 128
    n_layers: int = 2
    seq_len: int = 64
    batch_size: int = 8
    lr: float = 3e-4
    max_grad_norm: float = 1.0
    steps: int = 6
    use_amp: bool = device.type == "cuda"
    load_dtype: torch.dtype = torch.float16 if device.type == "cuda" else torch.float32  # expect[w]: any


class TinyCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(cfg.seq_len, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, nhead=4, dim_feedforward=4 * cfg.d_model,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.register_buffer("causal", torch.triu(torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool), 1))

    def forward(self, ids):
        t = ids.shape[1]
        h = self.embed(ids) + self.pos[:t]
        h = self.blocks(h, mask=self.causal[:t, :t])
        return self.head(h)


def load_pretrained(cfg):
    model = TinyCausalLM(cfg)
    # pretend to restore pretrained weights, then place the model for fine-tuning
    return model.to(device=device, dtype=cfg.load_dtype)  # expect[w]: any


def synthetic_batches(cfg, n):
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        ids = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len + 1), generator=g)
        yield ids.to(device)


def finetune(cfg):
    model = load_pretrained(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.use_amp)
    losses = []
    for ids in synthetic_batches(cfg, cfg.steps):
        inputs, targets = ids[:, :-1], ids[:, 1:]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=cfg.use_amp):
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), targets.reshape(-1))
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
    mean_loss = torch.stack(losses).float().mean().item()
    print(f"mean loss {mean_loss:.4f} (ppl {math.exp(mean_loss):.1f})")


if __name__ == "__main__":
    finetune(FinetuneConfig())
