# source: https://github.com/huggingface/transformers/issues/24840
# area: AMP
# bug: at the end of an epoch the trainer unscales/clips a partial accumulation window but the stepper refuses to step/update, so on a GPU the next unscale_ raises "unscale_() has already been called"
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class FinetuneConfig:
    vocab: int = 500
    seq_len: int = 32
    n_labels: int = 3
    batch_size: int = 16
    grad_accum: int = 4
    max_grad_norm: float = 1.0
    epochs: int = 3
    lr: float = 2e-3


class BagOfTokensClassifier(nn.Module):
    def __init__(self, cfg: FinetuneConfig):
        super().__init__()
        self.embed = nn.EmbeddingBag(cfg.vocab, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Dropout(0.1), nn.Linear(128, cfg.n_labels))

    def forward(self, ids):
        return self.mlp(self.embed(ids))


class AccumulatingStepper:
    def __init__(self, optimizer, scaler, accum_steps):
        self.optimizer, self.scaler, self.accum_steps = optimizer, scaler, accum_steps
        self._micro = 0

    def backward(self, loss):
        self.scaler.scale(loss / self.accum_steps).backward()
        self._micro += 1

    def clip_(self, params, max_norm):
        self.scaler.unscale_(self.optimizer)
        return nn.utils.clip_grad_norm_(params, max_norm)

    def step(self):
        if self._micro < self.accum_steps:  # expect[acc]: any
            return False
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self._micro = 0
        return True


def make_loader(cfg, n=280):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, cfg.vocab, (n, cfg.seq_len), generator=g)
    labels = (ids[:, :4].sum(dim=1) % cfg.n_labels)
    return DataLoader(TensorDataset(ids, labels), batch_size=cfg.batch_size, shuffle=True,
                      pin_memory=torch.cuda.is_available())


def finetune(cfg, device):
    use_amp = device.type == "cuda"
    model = BagOfTokensClassifier(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    stepper = AccumulatingStepper(opt, torch.amp.GradScaler(device.type, enabled=use_amp), cfg.grad_accum)
    loader = make_loader(cfg)
    for epoch in range(cfg.epochs):
        model.train()
        n_updates = 0
        epoch_loss = torch.zeros((), device=device)
        for step, (ids, labels) in enumerate(loader):
            ids = ids.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
                loss = F.cross_entropy(model(ids), labels)
            stepper.backward(loss)
            epoch_loss += loss.detach()
            last_in_epoch = step + 1 == len(loader)
            if (step + 1) % cfg.grad_accum == 0 or last_in_epoch:
                stepper.clip_(model.parameters(), cfg.max_grad_norm)  # expect[acc]: any
                n_updates += int(stepper.step())
        print(f"epoch {epoch}: updates={n_updates} mean loss={(epoch_loss / len(loader)).item():.4f}")


if __name__ == "__main__":
    finetune(FinetuneConfig(), torch.device("cuda" if torch.cuda.is_available() else "cpu"))
