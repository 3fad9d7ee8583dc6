# source: https://github.com/pytorch/pytorch/issues/17484
# area: device placement
# bug: nn.Parameter(...).to(device) yields a plain non-leaf copy on a GPU, so logit_scale is never registered, optimized or saved
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ContrastiveConfig:
    image_dim: int = 64
    text_dim: int = 48
    embed_dim: int = 32
    init_temperature: float = 0.07
    lr: float = 5e-3
    steps: int = 25
    batch_size: int = 32


class Projection(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, out_dim * 2)
        self.fc2 = nn.Linear(out_dim * 2, out_dim)
        self.norm = nn.LayerNorm(out_dim)

    def forward(self, x):
        return self.norm(self.fc2(F.gelu(self.fc1(x))))


class DualEncoder(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        self.image_proj = Projection(cfg.image_dim, cfg.embed_dim).to(device)
        self.text_proj = Projection(cfg.text_dim, cfg.embed_dim).to(device)
        init = math.log(1.0 / cfg.init_temperature)
        self.logit_scale = nn.Parameter(torch.tensor(init)).to(device)  # expect: any

    def forward(self, images, texts):
        img = F.normalize(self.image_proj(images), dim=-1)
        txt = F.normalize(self.text_proj(texts), dim=-1)
        scale = self.logit_scale.exp().clamp(max=100.0)
        return scale * img @ txt.t()


def make_pairs(n, cfg, generator):
    images = torch.randn(n, cfg.image_dim, generator=generator)
    mixing = torch.randn(cfg.image_dim, cfg.text_dim, generator=generator) / cfg.image_dim ** 0.5
    texts = images @ mixing + 0.1 * torch.randn(n, cfg.text_dim, generator=generator)
    return images, texts


def clip_loss(logits):
    labels = torch.arange(logits.size(0), device=logits.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))


def train(cfg, device):
    gen = torch.Generator().manual_seed(0)
    images, texts = make_pairs(cfg.batch_size * cfg.steps, cfg, gen)
    images, texts = images.to(device), texts.to(device)

    model = DualEncoder(cfg, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)

    running = torch.zeros((), device=device)
    for step in range(cfg.steps):
        sl = slice(step * cfg.batch_size, (step + 1) * cfg.batch_size)
        logits = model(images[sl], texts[sl])
        loss = clip_loss(logits)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return model, running / cfg.steps


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ContrastiveConfig()
    model, mean_loss = train(cfg, device)
    keys = sorted(model.state_dict().keys())
    print(f"mean loss {mean_loss.item():.4f}")
    print(f"temperature {1.0 / model.logit_scale.exp().item():.4f}")
    print("logit_scale saved:", "logit_scale" in keys)


if __name__ == "__main__":
    main()
