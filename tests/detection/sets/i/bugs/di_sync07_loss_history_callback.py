# source: https://discuss.pytorch.org/t/optimizing-training-recording-batch-statistics/22649
# area: transfer & sync
# bug: the history callback pulls the loss to the host with .item() after every batch, stalling the CPU on the GPU once per step just to fill a Python list
import math
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class KeywordSpotter(nn.Module):
    def __init__(self, n_mels=40, n_keywords=12):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(n_mels, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 64, 5, padding=2, dilation=1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, n_keywords),
        )

    def forward(self, mels):
        return self.net(mels)


class Callback:
    def on_batch_end(self, trainer, loss, logits, target):
        pass

    def on_epoch_end(self, trainer, epoch):
        pass


class HistoryCallback(Callback):
    def __init__(self):
        self.loss_history = []
        self.correct = None
        self.seen = 0

    def on_batch_end(self, trainer, loss, logits, target):
        self.loss_history.append(loss.item())  # expect: any
        hits = (logits.argmax(dim=1) == target).sum()
        self.correct = hits if self.correct is None else self.correct + hits
        self.seen += target.numel()

    def on_epoch_end(self, trainer, epoch):
        n = len(self.loss_history)
        mean = sum(self.loss_history) / max(n, 1)
        acc = (self.correct.float() / max(self.seen, 1)).item()
        print(f"epoch {epoch}: {n} batches, loss {mean:.4f}, acc {acc:.3f}")
        self.loss_history.clear()
        self.correct, self.seen = None, 0


class Trainer:
    def __init__(self, model, loader, device, callbacks=(), lr=1e-3):
        self.model = model.to(device)
        self.loader = loader
        self.device = device
        self.callbacks = list(callbacks)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.crit = nn.CrossEntropyLoss(label_smoothing=0.05)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            for mels, target in self.loader:
                mels = mels.to(self.device, non_blocking=True)
                target = target.to(self.device, non_blocking=True)
                logits = self.model(mels)
                loss = self.crit(logits, target)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                for cb in self.callbacks:
                    cb.on_batch_end(self, loss.detach(), logits.detach(), target)
            for cb in self.callbacks:
                cb.on_epoch_end(self, epoch)


def synthetic_speech_commands(n=256, n_mels=40, frames=50, n_keywords=12):
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, n_keywords, (n,), generator=g)
    t = torch.linspace(0, 2 * math.pi, frames)
    base = torch.sin(t[None, None, :] * (1 + labels[:, None, None].float() / 4))
    mels = base.expand(n, n_mels, frames) + 0.3 * torch.randn(n, n_mels, frames, generator=g)
    return TensorDataset(mels.contiguous(), labels)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(synthetic_speech_commands(), batch_size=32, shuffle=True,
                        pin_memory=torch.cuda.is_available())
    Trainer(KeywordSpotter(), loader, device, callbacks=[HistoryCallback()]).fit(epochs=3)
