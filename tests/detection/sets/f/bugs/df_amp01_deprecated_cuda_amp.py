# source: https://github.com/mit-han-lab/efficientvit/issues/127
# area: AMP
# bug: the trainer still builds its scaler and autocast region from the deprecated torch.cuda.amp namespace instead of torch.amp (FutureWarning on a GPU, slated for removal)
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class SegConfig:
    num_classes: int = 5
    width: int = 16
    lr: float = 2e-3
    epochs: int = 2
    steps_per_epoch: int = 6
    batch_size: int = 4
    image_size: int = 32
    amp: bool = True


class LiteConvBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.dw = nn.Conv2d(ch, ch, 3, padding=1, groups=ch)
        self.pw = nn.Conv2d(ch, ch, 1)
        self.norm = nn.BatchNorm2d(ch)

    def forward(self, x):
        return x + F.hardswish(self.norm(self.pw(self.dw(x))))


class TinySegNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stem = nn.Conv2d(3, cfg.width, 3, stride=2, padding=1)
        self.blocks = nn.Sequential(*[LiteConvBlock(cfg.width) for _ in range(2)])
        self.head = nn.Conv2d(cfg.width, cfg.num_classes, 1)

    def forward(self, x):
        h = self.blocks(F.hardswish(self.stem(x)))
        logits = self.head(h)
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


def synthetic_batch(cfg, device):
    img = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device)
    mask = torch.randint(0, cfg.num_classes, (cfg.batch_size, cfg.image_size, cfg.image_size), device=device)
    return img, mask


class SegTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.use_amp = cfg.amp and device.type == "cuda"
        self.model = TinySegNet(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.use_amp)  # expect[dep]: any

    def train_step(self, img, mask):
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.amp.autocast(enabled=self.use_amp):  # expect[dep]: any
            logits = self.model(img)
            loss = F.cross_entropy(logits, mask)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()

    def fit(self):
        self.model.train()
        for epoch in range(self.cfg.epochs):
            total = torch.zeros((), device=self.device)
            for _ in range(self.cfg.steps_per_epoch):
                img, mask = synthetic_batch(self.cfg, self.device)
                total += self.train_step(img, mask)
            print(f"epoch {epoch} mean loss {(total / self.cfg.steps_per_epoch).item():.4f}")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = SegTrainer(SegConfig(), device)
    trainer.fit()


if __name__ == "__main__":
    main()
