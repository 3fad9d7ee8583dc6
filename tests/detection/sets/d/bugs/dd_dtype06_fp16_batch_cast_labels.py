# source: https://github.com/gaojingsheng/LAMM/issues/1
# area: dtype
# bug: in fp16 mode (enabled only on the GPU) the batch mover casts every tensor, including the integer class labels, to half, so cross_entropy gets a Half target instead of Long
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ValConfig:
    num_classes: int = 10
    feat_dim: int = 128
    batch_size: int = 64
    num_batches: int = 8


class AudioTagger(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(),
            nn.Conv1d(16, 32, 5, stride=2, padding=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.classifier = nn.Linear(32, cfg.num_classes)

    def forward(self, wave):
        return self.classifier(self.encoder(wave).flatten(1))


class Validator:
    def __init__(self, model, device, fp16):
        self.device = device
        self.fp16 = fp16
        self.model = model.to(device)
        if fp16:
            self.model.half()

    def move_batch(self, batch):
        out = {}
        for key, value in batch.items():
            value = value.to(self.device)
            if self.fp16:
                value = value.half()  # expect: any
            out[key] = value
        return out

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        total_loss = torch.zeros((), device=self.device)
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        seen = 0
        for batch in loader:
            batch = self.move_batch(batch)
            logits = self.model(batch["wave"])
            total_loss += F.cross_entropy(logits, batch["label"], reduction="sum").float()
            correct += (logits.argmax(-1) == batch["label"]).sum()
            seen += batch["label"].shape[0]
        return {"loss": total_loss.item() / seen, "acc": correct.item() / seen}


def synthetic_loader(cfg, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(cfg.num_batches):
        yield {
            "wave": torch.randn(cfg.batch_size, 1, cfg.feat_dim, generator=g),
            "label": torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=g),
        }


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ValConfig()
    validator = Validator(AudioTagger(cfg), device, fp16=device.type == "cuda")
    print(validator.run(synthetic_loader(cfg)))


if __name__ == "__main__":
    main()
