# source: https://github.com/pytorch/torchtitan/pull/134
# area: transfer & sync
# bug: the per-step timer calls torch.cuda.synchronize() on every iteration just to log step time, stalling the CPU so it can never queue ahead of the GPU
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainConfig:
    vocab: int = 512
    dim: int = 128
    n_layers: int = 2
    seq_len: int = 64
    batch_size: int = 8
    steps: int = 20
    log_freq: int = 10
    lr: float = 3e-4


@dataclass
class StepMetrics:
    step_times: list = field(default_factory=list)
    data_times: list = field(default_factory=list)


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab, cfg.dim)
        layer = nn.TransformerEncoderLayer(cfg.dim, 4, 4 * cfg.dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.out = nn.Linear(cfg.dim, cfg.vocab)

    def forward(self, tokens):
        return self.out(self.blocks(self.emb(tokens)))


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = TinyLM(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.metrics = StepMetrics()
        self._t_step = time.perf_counter()

    def next_batch(self):
        t0 = time.perf_counter()
        tokens = torch.randint(0, self.cfg.vocab, (self.cfg.batch_size, self.cfg.seq_len + 1), device=device)
        self.metrics.data_times.append(time.perf_counter() - t0)
        return tokens[:, :-1], tokens[:, 1:]

    def _record_step_time(self):
        if device.type == "cuda":
            torch.cuda.synchronize()  # expect: any
        now = time.perf_counter()
        self.metrics.step_times.append(now - self._t_step)
        self._t_step = now

    def train_step(self, inputs, labels):
        self.opt.zero_grad(set_to_none=True)
        logits = self.model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        return loss.detach()

    def fit(self):
        for step in range(1, self.cfg.steps + 1):
            inputs, labels = self.next_batch()
            loss = self.train_step(inputs, labels)
            self._record_step_time()
            if step % self.cfg.log_freq == 0:
                window = self.metrics.step_times[-self.cfg.log_freq:]
                avg = sum(window) / len(window)
                print(f"step {step:3d} loss {loss.item():.4f} step_time {avg * 1e3:.1f}ms")


if __name__ == "__main__":
    torch.manual_seed(0)
    Trainer(TrainConfig()).fit()
