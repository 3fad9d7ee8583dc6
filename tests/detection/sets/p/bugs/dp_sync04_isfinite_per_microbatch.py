# source: https://github.com/pytorch/torchtitan/pull/3863
# area: transfer & sync
# bug: the NaN/inf guard evaluates a CUDA tensor in an `if` after every microbatch, forcing a device-to-host sync inside gradient accumulation
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class JobConfig:
    vocab_size: int = 256
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 32
    local_batch_size: int = 8
    grad_accum_steps: int = 3
    steps: int = 4
    log_freq: int = 2
    lr: float = 3e-4
    max_norm: float = 1.0


class TinyDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos = nn.Embedding(cfg.seq_len, cfg.dim)
        layer = nn.TransformerEncoderLayer(cfg.dim, cfg.n_heads, 4 * cfg.dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(cfg.seq_len), persistent=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.tok(tokens) + self.pos(pos)
        h = self.blocks(h, mask=self.causal, is_causal=True)
        return self.out(self.norm(h))


def cross_entropy_loss(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


class SyntheticTokens:
    def __init__(self, cfg, device):
        self.cfg, self.device = cfg, device

    def next_batch(self):
        data = torch.randint(0, self.cfg.vocab_size, (self.cfg.local_batch_size, self.cfg.seq_len + 1), device=self.device)
        return data[:, :-1], data[:, 1:]


class Trainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.model = TinyDecoder(cfg).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.data = SyntheticTokens(cfg, device)
        self.step = 0

    def forward_backward_step(self, inputs, labels):
        logits = self.model(inputs)
        loss = cross_entropy_loss(logits, labels) / self.cfg.grad_accum_steps
        if not torch.isfinite(loss):  # expect: any
            raise RuntimeError(f"Non-finite loss at step {self.step}; inputs shape={tuple(inputs.shape)}")
        loss.backward()
        return loss.detach()

    def train_step(self):
        self.optimizer.zero_grad(set_to_none=True)
        accumulated = []
        for _ in range(self.cfg.grad_accum_steps):
            inputs, labels = self.data.next_batch()
            accumulated.append(self.forward_backward_step(inputs, labels))
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_norm)
        self.optimizer.step()
        return torch.stack(accumulated).sum(), grad_norm

    def train(self):
        for _ in range(self.cfg.steps):
            self.step += 1
            loss, grad_norm = self.train_step()
            if self.step % self.cfg.log_freq == 0:
                print(f"step {self.step:3d}  loss {loss.item():.4f}  grad_norm {grad_norm.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    Trainer(JobConfig(), device).train()
