# twin of: bugs/de_amp01_unscale_before_clip.py
# area: AMP
# correct: gradients are unscaled with scaler.unscale_ before noise and clipping, so the threshold applies to true gradient norms
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class TrainConfig:
    feat_dim: int = 40
    hidden: int = 64
    num_labels: int = 30
    batch: int = 16
    frames: int = 50
    steps: int = 6
    lr: float = 1e-3
    grad_clip: float = 5.0
    grad_noise: float = 1e-4


class FrameEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg.feat_dim, cfg.hidden)
        self.lstm = nn.LSTM(cfg.hidden, cfg.hidden, batch_first=True)
        self.out = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, feats):
        h = torch.relu(self.proj(feats))
        h, _ = self.lstm(h)
        return self.out(h)


def synthetic_batch(cfg, device):
    feats = torch.randn(cfg.batch, cfg.frames, cfg.feat_dim, device=device)
    labels = torch.randint(0, cfg.num_labels, (cfg.batch, cfg.frames), device=device)
    return feats, labels


class Engine:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.model = FrameEncoder(cfg).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.criterion = nn.CrossEntropyLoss()

    def _apply_grad_noise(self):
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.add_(torch.randn_like(p.grad) * self.cfg.grad_noise)

    def train_step(self, feats, labels):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(feats)
            loss = self.criterion(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        self._apply_grad_noise()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainConfig()
    engine = Engine(cfg, device)
    losses = []
    for _ in range(cfg.steps):
        feats, labels = synthetic_batch(cfg, device)
        losses.append(engine.train_step(feats, labels))
    print("mean loss", torch.stack(losses).mean().item())


if __name__ == "__main__":
    main()
