# twin of: bugs/dm_amp01_clip_callback_scaled_grads.py
# area: AMP
# correct: the callback unscales the optimizer gradients before clipping, so max_norm applies to the true gradients
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass, field
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainerConfig:
    max_epochs: int = 3
    lr: float = 3e-3
    batch_size: int = 32
    gradient_clip_val: float = 1.0
    precision: str = "16-mixed"
    callbacks: list = field(default_factory=list)


class Callback:
    def on_after_backward(self, trainer):
        pass

    def on_train_epoch_end(self, trainer):
        pass


class GradientClipCallback(Callback):
    def __init__(self, max_norm):
        self.max_norm = max_norm

    def on_after_backward(self, trainer):
        trainer.scaler.unscale_(trainer.optimizer)
        params = [p for p in trainer.model.parameters() if p.grad is not None]
        trainer.last_grad_norm = torch.nn.utils.clip_grad_norm_(params, self.max_norm)


class EpochLogger(Callback):
    def on_train_epoch_end(self, trainer):
        mean_loss = (trainer.epoch_loss / trainer.epoch_batches).item()
        print(f"epoch {trainer.epoch}: loss={mean_loss:.4f} grad_norm={float(trainer.last_grad_norm):.3f}")


class MiniTrainer:
    def __init__(self, model, cfg: TrainerConfig, device):
        self.cfg = cfg
        self.device = device
        self.model = model.to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.use_amp = cfg.precision == "16-mixed" and device.type == "cuda"
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.use_amp)
        self.callbacks = list(cfg.callbacks)
        if cfg.gradient_clip_val:
            self.callbacks.append(GradientClipCallback(cfg.gradient_clip_val))
        self.last_grad_norm = torch.zeros((), device=device)

    def _call(self, hook):
        for cb in self.callbacks:
            getattr(cb, hook)(self)

    def training_step(self, x, y):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(x)
            return F.cross_entropy(logits, y)

    def fit(self, loader):
        self.model.train()
        for self.epoch in range(self.cfg.max_epochs):
            self.epoch_loss = torch.zeros((), device=self.device)
            self.epoch_batches = 0
            for x, y in loader:
                x = x.to(self.device, non_blocking=True)
                y = y.to(self.device, non_blocking=True)
                self.optimizer.zero_grad(set_to_none=True)
                loss = self.training_step(x, y)
                self.scaler.scale(loss).backward()
                self._call("on_after_backward")
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.epoch_loss += loss.detach().float()
                self.epoch_batches += 1
            self._call("on_train_epoch_end")


def make_loader(n=512, dim=20, classes=4, batch_size=32):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dim, generator=g)
    w = torch.randn(dim, classes, generator=g)
    y = (x @ w).argmax(dim=1)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True,
                      pin_memory=torch.cuda.is_available())


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 4))
    cfg = TrainerConfig(callbacks=[EpochLogger()])
    trainer = MiniTrainer(model, cfg, device)
    trainer.fit(make_loader(batch_size=cfg.batch_size))


if __name__ == "__main__":
    main()
