# source: https://github.com/Deci-AI/super-gradients/pull/653
# area: AMP
# bug: with the GradScaler enabled on CUDA the gradients are clipped while still multiplied by the loss scale (no scaler.unscale_ first), so clipping crushes every update
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class TrainingParams:
    num_classes: int = 10
    batch_size: int = 16
    batch_accumulate: int = 4
    clip_grad_norm: float = 5.0
    lr: float = 0.05
    epochs: int = 2
    batches_per_epoch: int = 8
    mixed_precision: bool = True


def build_model(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes),
    )


class SyntheticImages:
    def __init__(self, params, seed=0):
        g = torch.Generator().manual_seed(seed)
        n = params.batch_size * params.batches_per_epoch
        self.x = torch.randn(n, 3, 24, 24, generator=g)
        self.y = torch.randint(0, params.num_classes, (n,), generator=g)
        self.bs = params.batch_size

    def __iter__(self):
        for i in range(0, len(self.x), self.bs):
            yield self.x[i:i + self.bs], self.y[i:i + self.bs]


class Trainer:
    def __init__(self, model, params, device):
        self.params = params
        self.device = device
        self.net = model.to(device)
        self.amp = params.mixed_precision and device.type == "cuda"
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=params.lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)

    def _backward_step(self, loss, batch_idx):
        self.scaler.scale(loss / self.params.batch_accumulate).backward()
        if (batch_idx + 1) % self.params.batch_accumulate == 0:
            self._optimizer_step()

    def _optimizer_step(self):
        if self.params.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.params.clip_grad_norm)  # expect: any
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)

    def train_epoch(self, loader):
        self.net.train()
        running = torch.zeros((), device=self.device)
        for batch_idx, (x, y) in enumerate(loader):
            x, y = x.to(self.device), y.to(self.device)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.amp):
                loss = F.cross_entropy(self.net(x), y)
            self._backward_step(loss, batch_idx)
            running += loss.detach().float()
        return running / (batch_idx + 1)

    def fit(self, loader):
        losses = [self.train_epoch(loader) for _ in range(self.params.epochs)]
        return torch.stack(losses)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    params = TrainingParams()
    trainer = Trainer(build_model(params.num_classes), params, device)
    losses = trainer.fit(SyntheticImages(params))
    print("epoch losses:", [round(v, 4) for v in losses.tolist()])


if __name__ == "__main__":
    main()
