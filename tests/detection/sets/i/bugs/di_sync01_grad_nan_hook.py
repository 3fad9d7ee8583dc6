# source: https://github.com/NVIDIA/Megatron-LM/pull/7076
# area: transfer & sync
# bug: the per-parameter gradient hook reads a device predicate with .item() during backward, forcing one host sync per parameter every step
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class TrainConfig:
    vocab: int = 512
    d_model: int = 64
    n_layers: int = 4
    seq_len: int = 32
    batch_size: int = 8
    steps: int = 12
    lr: float = 3e-4
    check_grads: bool = True


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.ln(x))


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.vocab)

    def forward(self, idx):
        h = self.emb(idx)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)


class GradValidator:
    """Watches gradients as autograd produces them and records bad steps."""

    def __init__(self, model):
        self.bad_params = []
        self.handles = []
        for name, p in model.named_parameters():
            if p.requires_grad:
                self.handles.append(p.register_hook(self._make_hook(name)))

    def _make_hook(self, name):
        def hook(grad):
            finite = torch.isfinite(grad).all()
            if not finite.item():  # expect: any
                self.bad_params.append(name)
            return grad
        return hook

    def reset(self):
        self.bad_params.clear()

    def step_is_bad(self):
        return len(self.bad_params) > 0


def synthetic_batch(cfg, device):
    x = torch.randint(0, cfg.vocab, (cfg.batch_size, cfg.seq_len + 1), device=device)
    return x[:, :-1], x[:, 1:]


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyLM(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    validator = GradValidator(model) if cfg.check_grads else None
    loss_fn = nn.CrossEntropyLoss()
    running = torch.zeros((), device=device)
    skipped = 0
    for step in range(cfg.steps):
        inp, tgt = synthetic_batch(cfg, device)
        logits = model(inp)
        loss = loss_fn(logits.reshape(-1, cfg.vocab), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        if validator is not None:
            validator.reset()
        loss.backward()
        if validator is not None and validator.step_is_bad():
            skipped += 1
            continue
        opt.step()
        running += loss.detach()
    print(f"mean loss {(running / max(cfg.steps - skipped, 1)).item():.4f}, skipped {skipped}")


if __name__ == "__main__":
    train(TrainConfig())
