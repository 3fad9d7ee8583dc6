# source: https://github.com/microsoft/InnerEye-DeepLearning/issues/401
# area: dtype
# bug: the classifier ends in Sigmoid and is trained with nn.BCELoss; once 16-bit precision is switched on for CUDA, binary_cross_entropy refuses to run under autocast
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class RunConfig:
    image_size: int = 32
    batch_size: int = 16
    epochs: int = 2
    lr: float = 3e-4
    precision: int = 16


class GlaucomaClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, x):
        return self.head(self.features(x)).squeeze(1)


class ClassificationModule:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.criterion = nn.BCELoss()  # expect[bce]: any
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

    def training_step(self, images, labels):
        probs = self.model(images)
        return self.criterion(probs, labels)  # expect[bce]: any


class MiniTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.amp = cfg.precision == 16 and device.type == "cuda"
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.amp)

    def fit(self, module, loader):
        module.model.train()
        for epoch in range(self.cfg.epochs):
            running = torch.zeros((), device=self.device)
            for images, labels in loader:
                images = images.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                module.optimizer.zero_grad(set_to_none=True)
                with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.amp):
                    loss = module.training_step(images, labels)
                self.scaler.scale(loss).backward()
                self.scaler.step(module.optimizer)
                self.scaler.update()
                running += loss.detach()
            print(f"epoch {epoch}: mean loss {(running / len(loader)).item():.4f}")


def make_loader(cfg, pin):
    g = torch.Generator().manual_seed(0)
    images = torch.randn(128, 3, cfg.image_size, cfg.image_size, generator=g)
    labels = (images[:, 0].mean(dim=(1, 2)) > 0).float()
    return DataLoader(TensorDataset(images, labels), batch_size=cfg.batch_size, shuffle=True, pin_memory=pin)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = RunConfig()
    module = ClassificationModule(GlaucomaClassifier().to(device), cfg)
    MiniTrainer(cfg, device).fit(module, make_loader(cfg, pin=device.type == "cuda"))


if __name__ == "__main__":
    main()
