# twin of: bugs/cd_sync01_microbatch_token_count.py
# area: transfer & sync
# correct: the token count is summed as a device tensor and used on the device, so the microbatch loop never waits for the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class ScheduleConfig:
    vocab_size: int = 128
    d_model: int = 64
    seq_len: int = 32
    micro_batch_size: int = 4
    num_microbatches: int = 4
    train_steps: int = 6
    pad_id: int = 0
    lr: float = 3e-4


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, nhead=4, dim_feedforward=128,
                                           batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


def make_microbatch(cfg, device):
    tokens = torch.randint(1, cfg.vocab_size, (cfg.micro_batch_size, cfg.seq_len + 1))
    lengths = torch.randint(cfg.seq_len // 2, cfg.seq_len + 1, (cfg.micro_batch_size,))
    pad = torch.arange(cfg.seq_len + 1)[None, :] > lengths[:, None]
    tokens[pad] = cfg.pad_id
    return tokens.to(device)


def forward_step(model, batch, cfg):
    inputs, labels = batch[:, :-1], batch[:, 1:]
    logits = model(inputs)
    loss_mask = (labels != cfg.pad_id).float()
    per_token = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), labels.reshape(-1),
                                reduction="none")
    loss_sum = (per_token * loss_mask.reshape(-1)).sum()
    return loss_sum, loss_mask.sum()


def forward_backward_no_pipelining(model, batches, cfg):
    total_num_tokens = torch.zeros((), device=next(model.parameters()).device)
    losses = []
    for batch in batches:
        loss_sum, num_tokens = forward_step(model, batch, cfg)
        total_num_tokens += num_tokens
        loss_sum.backward()
        losses.append(loss_sum.detach())
    return torch.stack(losses).sum(), total_num_tokens


def finalize_grads(model, total_num_tokens):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(total_num_tokens)


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyLM(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    history = []
    for step in range(cfg.train_steps):
        batches = [make_microbatch(cfg, device) for _ in range(cfg.num_microbatches)]
        opt.zero_grad(set_to_none=True)
        loss_sum, n_tok = forward_backward_no_pipelining(model, batches, cfg)
        finalize_grads(model, n_tok)
        opt.step()
        history.append(loss_sum / n_tok)
    losses = torch.stack(history).tolist()
    for i, v in enumerate(losses):
        print(f"step {i}: loss/token {v:.4f}")


if __name__ == "__main__":
    train(ScheduleConfig())
