# source: https://github.com/pytorch/torchtitan/pull/3873
# area: transfer & sync
# bug: the non-finite loss guard evaluates a CUDA bool in Python after every micro-batch, a device-to-host sync inside the gradient-accumulation loop
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class JobConfig:
    vocab_size: int = 256
    dim: int = 64
    n_heads: int = 4
    seq_len: int = 32
    local_batch: int = 16
    grad_accum_steps: int = 4
    steps: int = 4
    lr: float = 3e-4
    max_norm: float = 1.0
    log_freq: int = 2


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos = nn.Parameter(torch.zeros(1, cfg.seq_len, cfg.dim))
        self.block = nn.TransformerEncoderLayer(cfg.dim, cfg.n_heads, 4 * cfg.dim, dropout=0.0,
                                                batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        h = self.tok(idx) + self.pos[:, :t]
        h = self.block(h, src_mask=mask, is_causal=True)
        return self.out(self.norm(h))


class Trainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.model = TinyLM(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.1)
        self.step = 0

    def next_batch(self):
        c = self.cfg
        data = torch.randint(0, c.vocab_size, (c.local_batch, c.seq_len + 1), device=self.device)
        return data[:, :-1], data[:, 1:]

    def loss_fn(self, logits, labels):
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())

    def forward_backward(self, inputs, labels):
        loss = self.loss_fn(self.model(inputs), labels) / self.cfg.grad_accum_steps
        if not torch.isfinite(loss):  # expect: any
            raise RuntimeError(f"non-finite loss at step {self.step}")
        loss.backward()
        return loss.detach()

    def train_step(self):
        self.opt.zero_grad(set_to_none=True)
        accumulated = torch.zeros((), device=self.device)
        for _ in range(self.cfg.grad_accum_steps):
            inputs, labels = self.next_batch()
            accumulated += self.forward_backward(inputs, labels)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_norm)
        self.opt.step()
        self.step += 1
        return accumulated, grad_norm

    def train(self):
        for _ in range(self.cfg.steps):
            loss, grad_norm = self.train_step()
            if self.step % self.cfg.log_freq == 0:
                loss_val, norm_val = loss.item(), grad_norm.item()
                print(f"step {self.step:3d}  loss {loss_val:.4f}  ppl {math.exp(loss_val):.1f}  gnorm {norm_val:.3f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    Trainer(JobConfig(), device).train()


if __name__ == "__main__":
    main()
