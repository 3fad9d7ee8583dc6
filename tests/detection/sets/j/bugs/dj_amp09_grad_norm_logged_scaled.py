# source: https://github.com/languini-kitchen/languini-kitchen/pull/7
# area: AMP
# bug: the logged gradient norm is read from the still-scaled gradients (no scaler.unscale_ before it), so on CUDA the metric is inflated by the changing loss scale
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LMConfig:
    vocab: int = 96
    d_model: int = 64
    seq_len: int = 24
    batch: int = 8
    steps: int = 8
    log_every: int = 4
    lr: float = 1e-3
    amp_dtype: torch.dtype = torch.float16


class CharRNNLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.emb = nn.Embedding(c.vocab, c.d_model)
        self.rnn = nn.LSTM(c.d_model, c.d_model, num_layers=2, batch_first=True)
        self.out = nn.Linear(c.d_model, c.vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def global_grad_norm(parameters):
    norms = [p.grad.detach().float().norm(2) for p in parameters if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(norms), 2)


@dataclass
class MetricLogger:
    records: list = field(default_factory=list)

    def log(self, step, **tensors):
        row = {k: round(float(v), 4) for k, v in tensors.items()}
        row["step"] = step
        self.records.append(row)


class LMTrainer:
    def __init__(self, c, device):
        self.c = c
        self.device = device
        self.amp = device.type == "cuda"
        self.model = CharRNNLM(c).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=c.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)
        self.logger = MetricLogger()

    def step(self, step, batch):
        x, y = batch[:, :-1].to(self.device), batch[:, 1:].to(self.device)
        with torch.autocast(self.device.type, dtype=self.c.amp_dtype, enabled=self.amp):
            logits = self.model(x)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if step % self.c.log_every == 0:
            grad_norm = global_grad_norm(self.model.parameters())  # expect: any
            self.logger.log(step, loss=loss.detach(), grad_norm=grad_norm)
        self.scaler.step(self.opt)
        self.scaler.update()

    def fit(self, corpus):
        for step in range(self.c.steps):
            self.step(step, corpus[step])
        return self.logger.records


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = LMConfig()
    corpus = torch.randint(0, cfg.vocab, (cfg.steps, cfg.batch, cfg.seq_len + 1))
    for rec in LMTrainer(cfg, device).fit(corpus):
        print(rec)
